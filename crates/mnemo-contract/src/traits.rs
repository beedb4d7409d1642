//! The swappable traits. Each has implementations registered by name (see `registry`).
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::model::*;
use crate::pack::Pack;
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

/// What `Store::changes_since` read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes {
    /// The store's newest rev (at least the last changed memory's; never the rev asked when the
    /// store holds less).
    pub newest: u64,
    /// The memories changed above the rev asked, by rev, at most the limit asked.
    pub memories: Vec<Memory>,
    /// The store's identity (`Store::identity`).
    pub identity: Option<StoreIdentity>,
    /// `Store::rev_fingerprint` of the last memory's rev (of the rev asked when none changed).
    pub fingerprint: Option<String>,
}

impl Changes {
    /// The changes read above a rev: `newest` is the store's newest rev as read before the
    /// memories (rows written after it may lie above it; the rev asked never counts).
    pub fn new(
        newest: u64,
        memories: Vec<Memory>,
        identity: Option<StoreIdentity>,
        fingerprint: Option<String>,
    ) -> Self {
        let newest = newest.max(memories.last().map_or(0, |m| m.rev));
        Changes { newest, memories, identity, fingerprint }
    }

    /// The rev whose fingerprint goes with `memories` read above `rev`: the last one's, or
    /// `rev` itself when none changed (None at 0: no change has that rev).
    pub fn fingerprinted_rev(rev: u64, memories: &[Memory]) -> Option<u64> {
        Some(memories.last().map_or(rev, |m| m.rev)).filter(|&at| at != 0)
    }

    /// The stamp an index records once these changes are applied.
    pub fn stamp(&self) -> IndexStamp {
        IndexStamp { store: self.identity.clone(), fingerprint: self.fingerprint.clone() }
    }
}

/// Which page of a namespace's memories `Store::list_memories` returns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPage {
    /// Only ids above this one (the last id of the previous page); None: from the start.
    pub after: Option<MemoryId>,
    /// At most this many.
    pub limit: usize,
    /// Tombstoned memories too (else active ones only).
    pub include_tombstoned: bool,
}

/// Who a Store is: an identity drawn when it was created (a new or emptied store gets a new
/// one) and a generation bumped whenever its content is replaced in place (a restore).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreIdentity {
    /// Opaque, stable for the store's life.
    pub id: String,
    /// Starts at 1; bumped when the content is replaced.
    pub generation: u64,
}

/// What a backup holds (written by `Store::backup_to`, or restored by `replace_from_backup`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupInfo {
    /// The file.
    pub path: std::path::PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The store's identity and generation in it (after a restore: the store's new ones).
    pub identity: Option<StoreIdentity>,
    /// Memories in it (every namespace, tombstoned ones included).
    pub memories: u64,
    /// Turns in it.
    pub turns: u64,
    /// The history chain head of each namespace in it (see [`crate::chain`]), by namespace: a
    /// store restored from it verifies against these (`mnemo verify`).
    #[serde(default)]
    pub chain_heads: Vec<crate::chain::ChainHead>,
}

/// What an Index records beside its watermark about the store it was built from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexStamp {
    /// The store's identity, if it has one.
    pub store: Option<StoreIdentity>,
    /// `Store::rev_fingerprint` of the watermark's rev when it was recorded.
    pub fingerprint: Option<String>,
}

/// Held while a namespace is planned and written; dropping it releases the lock.
pub type NamespaceGuard = Box<dyn std::any::Any + Send + Sync>;

/// Which retrieval signal(s) a search uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Lexical (BM25 or similar) only.
    Lexical,
    /// Dense vectors only.
    Dense,
    /// Both, fused.
    #[default]
    Hybrid,
}

impl SearchMode {
    /// Its name (`lexical`, `dense`, `hybrid`).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Lexical => "lexical",
            SearchMode::Dense => "dense",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

/// A search mode as every door takes it: `lexical` (or `bm25`), `dense` (or `vector`),
/// `hybrid`, in any case.
impl std::str::FromStr for SearchMode {
    type Err = crate::error::CoreError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "lexical" | "bm25" => Ok(SearchMode::Lexical),
            "dense" | "vector" => Ok(SearchMode::Dense),
            "hybrid" => Ok(SearchMode::Hybrid),
            _ => Err(crate::error::CoreError::InvalidInput(format!(
                "mode {s:?}: expected lexical (or bm25), dense (or vector) or hybrid"
            ))),
        }
    }
}

/// A claim's key as a caller names it: `entity | attribute` (what a task is `about`, what
/// `forget` and `history` take).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ClaimKey {
    /// The entity, as written (trimmed).
    pub entity: String,
    /// The attribute, as written (trimmed).
    pub attribute: String,
}

impl ClaimKey {
    /// A key from its two parts, both non-empty once trimmed.
    pub fn new(entity: &str, attribute: &str) -> Result<ClaimKey> {
        let (e, a) = (entity.trim(), attribute.trim());
        if e.is_empty() || a.is_empty() {
            return Err(crate::error::CoreError::InvalidInput(format!(
                "a claim is `entity | attribute`, both non-empty; got entity {entity:?}, attribute {attribute:?}"
            )));
        }
        // A part holds no separator and no line break: it is written into tagged lines (a
        // human's answer becomes `[SEM] entity | attribute | value`).
        if [e, a].iter().any(|p| p.contains('|') || p.chars().any(char::is_control)) {
            return Err(crate::error::CoreError::InvalidInput(format!(
                "a claim's entity and attribute hold no '|' and no line break; got entity {entity:?}, attribute {attribute:?}"
            )));
        }
        Ok(ClaimKey { entity: e.to_string(), attribute: a.to_string() })
    }

    /// The pair a [`Task`] holds.
    pub fn into_pair(self) -> (String, String) {
        (self.entity, self.attribute)
    }
}

impl std::fmt::Display for ClaimKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} | {}", self.entity, self.attribute)
    }
}

impl std::str::FromStr for ClaimKey {
    type Err = crate::error::CoreError;

    fn from_str(s: &str) -> Result<Self> {
        match s.split_once('|') {
            Some((e, a)) if !a.contains('|') => ClaimKey::new(e, a),
            _ => Err(crate::error::CoreError::InvalidInput(format!("a claim is `entity | attribute`, got {s:?}"))),
        }
    }
}

/// JSON input: `"entity | attribute"`, or `{"entity": …, "attribute": …}`.
impl<'de> Deserialize<'de> for ClaimKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Parts { entity: String, attribute: String },
        }
        match Written::deserialize(d)? {
            Written::Text(t) => t.parse(),
            Written::Parts { entity, attribute } => ClaimKey::new(&entity, &attribute),
        }
        .map_err(serde::de::Error::custom)
    }
}

/// A search request.
#[derive(Clone, Debug)]
pub struct SearchQuery {
    /// The namespace; applied inside the index.
    pub namespace: Namespace,
    /// Query text (lexical signal).
    pub text: String,
    /// Query embedding (dense signal), from the same embedder as the documents.
    pub embedding: Option<Vec<f32>>,
    /// How many hits at most.
    pub limit: usize,
    /// Which signals.
    pub mode: SearchMode,
}

/// One search hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The memory.
    pub id: MemoryId,
    /// Relevance in 0..=1, higher is better (fused when hybrid).
    pub score: f32,
}

/// What an Index needs of a memory.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexDoc {
    /// Id.
    pub id: MemoryId,
    /// Namespace.
    pub namespace: Namespace,
    /// Text.
    pub content: String,
    /// Entities (indexed with the text).
    pub entities: Vec<String>,
    /// Vector, if any.
    pub embedding: Option<Vec<f32>>,
    /// The memory's rev.
    pub rev: u64,
}

impl IndexDoc {
    /// The index's view of a memory.
    pub fn of(m: &Memory) -> Self {
        IndexDoc {
            id: m.id,
            namespace: m.namespace.clone(),
            content: m.content.clone(),
            entities: m.entities.clone(),
            embedding: m.embedding.as_ref().map(|e| e.vector.clone()),
            rev: m.rev,
        }
    }
}

/// Where a derived index stands relative to the Store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexState {
    /// It holds every change up to this Store rev (0: empty, fresh).
    UpTo(u64),
    /// It must be cleared and rebuilt from the Store; the text says why.
    Stale(String),
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

/// One figure an index reports on itself (see [`Index::figures`]).
#[derive(Clone, Debug, PartialEq)]
pub struct IndexFigure {
    /// A stable name (a benchmark's metric name).
    pub name: &'static str,
    /// Its value.
    pub value: f64,
    /// Its unit.
    pub unit: &'static str,
    /// What it is.
    pub note: String,
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

/// A candidate memory extracted from a turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Kind.
    pub kind: MemoryKind,
    /// Content text.
    pub content: String,
    /// Structured claim.
    pub claim: Option<Claim>,
    /// Entity names (as written; the engine normalises).
    pub entities: Vec<String>,
    /// Importance if stated (may be out of range: the engine clamps and says so).
    pub importance: Option<f64>,
    /// Pinned.
    pub pinned: bool,
    /// How many values the claim's attribute holds (meaningless without a claim). Config may
    /// fix it for named attributes (`[claims]`), which then wins over what extraction said.
    #[serde(default)]
    pub cardinality: Cardinality,
    /// When its fact holds in the world, if the turn said (a model's `valid_from` /
    /// `valid_to`, the fake grammar's `from=` / `to=`); unstated, the engine reads an interval
    /// phrase of the content ("from 2019 to 2021").
    #[serde(default, skip_serializing_if = "crate::world_time::Validity::is_unstated")]
    pub validity: crate::world_time::Validity,
}

/// A forget command: from a turn (extraction) or given directly (`Engine::forget`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ForgetCommand {
    /// Forget exactly the active claim(s) on this entity+attribute.
    Claim {
        /// Entity.
        entity: String,
        /// Attribute.
        attribute: String,
    },
    /// Forget what this text designates, and only that.
    Text(String),
}

impl ForgetCommand {
    /// A command given as an argument: `entity | attribute` (two non-empty parts) forgets that
    /// claim; any other text forgets what it designates. An optional leading `[FORGET]` is
    /// accepted; any other bracketed tag, an empty command or several lines are refused.
    pub fn parse_arg(arg: &str) -> std::result::Result<ForgetCommand, String> {
        let c = arg.trim();
        let refuse = |why: &str| Err(format!("{c:?} is not a forget command: {why}"));
        if c.contains('\n') {
            return refuse("a forget command is one line");
        }
        let body = match c.strip_prefix('[') {
            Some(rest) => match rest.split_once(']') {
                Some((tag, body)) if tag.trim().eq_ignore_ascii_case("forget") => body.trim(),
                _ => return refuse("give `entity | attribute` or free text (optionally prefixed [FORGET])"),
            },
            None => c,
        };
        if body.is_empty() {
            return refuse("it is empty");
        }
        let parts: Vec<&str> = body.split('|').map(str::trim).collect();
        Ok(if parts.len() == 2 && parts.iter().all(|p| !p.is_empty()) {
            ForgetCommand::Claim { entity: crate::text::fold_ws(parts[0]), attribute: crate::text::fold_ws(parts[1]) }
        } else {
            ForgetCommand::Text(crate::text::fold_ws(body))
        })
    }

    /// How the command reads (`entity | attribute`, or the text).
    pub fn describe(&self) -> String {
        match self {
            ForgetCommand::Claim { entity, attribute } => format!("{entity} | {attribute}"),
            ForgetCommand::Text(t) => t.clone(),
        }
    }
}

/// One item extracted from a turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtractedItem {
    /// A candidate memory.
    Memory(Candidate),
    /// A forget command.
    Forget(ForgetCommand),
}

/// Which model answered a reasoner call: the seam is loud.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// fake | live | replay | rules.
    pub client: ClientKind,
    /// The model string as echoed by the API.
    pub model: String,
}

/// The result of extraction: memories and forget commands in the order the turn gives them
/// (a forget after a statement in the same turn forgets it; one before it does not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    /// Candidate memories and forget commands, in turn order.
    pub items: Vec<ExtractedItem>,
    /// Who answered (the model string as the API echoed it).
    pub model: ModelInfo,
    /// What the extractor noticed and did not turn into items (said, never silently dropped).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Extraction {
    /// The candidate memories, in order.
    pub fn candidates(&self) -> impl Iterator<Item = &Candidate> {
        self.items.iter().filter_map(|l| match l {
            ExtractedItem::Memory(c) => Some(c),
            ExtractedItem::Forget(_) => None,
        })
    }
    /// The forget commands, in order.
    pub fn forgets(&self) -> impl Iterator<Item = &ForgetCommand> {
        self.items.iter().filter_map(|l| match l {
            ExtractedItem::Forget(f) => Some(f),
            ExtractedItem::Memory(_) => None,
        })
    }
}

/// How a candidate relates to its active neighbours.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Verdict {
    /// The same fact as this memory: reinforce it.
    Duplicate(MemoryId),
    /// Contradicts these memories: tombstone them, insert the candidate.
    Contradicts(Vec<MemoryId>),
    /// New: insert.
    Novel,
}

/// A reconcile verdict with who gave it and why: the engine applies a model's verdict only
/// where its own rules allow, and writes the reason and the model into the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reconciled {
    /// The verdict.
    pub verdict: Verdict,
    /// The model's reason, when it gave one.
    pub reason: Option<String>,
    /// Who answered (client and the model string as echoed).
    pub model: ModelInfo,
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

/// A value read from a system of record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroundedValue {
    /// The current value.
    pub value: String,
    /// The source's name (e.g. "erp").
    pub source: String,
    /// When the source says it was last updated, if it says.
    pub as_of: Option<Timestamp>,
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

/// How one system-of-record lookup ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum LookupOutcome {
    /// The source holds this value.
    Held {
        /// The value it holds.
        value: String,
    },
    /// The source does not hold the claim.
    NotHeld,
    /// No answer within the timeout: the claim stays unverified for this recall.
    Timeout,
    /// The source failed (down, unreadable): unverified for this recall.
    Error {
        /// What failed.
        message: String,
    },
    /// The source answered something that cannot be a value (empty, multi-line, too long,
    /// several values): unverified for this recall, and never written to memory.
    Garbage {
        /// What was wrong with it.
        message: String,
    },
}

impl LookupOutcome {
    /// Whether the lookup failed (timeout, error or garbage).
    pub fn is_fault(&self) -> bool {
        matches!(self, LookupOutcome::Timeout | LookupOutcome::Error { .. } | LookupOutcome::Garbage { .. })
    }
}

/// One lookup the assessor made, for the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroundingLookup {
    /// The memory whose claim was looked up.
    pub memory: MemoryId,
    /// The claim's entity.
    pub entity: String,
    /// The claim's attribute.
    pub attribute: String,
    /// The grounder's source name.
    pub source: String,
    /// How long it took, in milliseconds (elapsed time, not simulated time).
    pub took_ms: f64,
    /// How it ended.
    #[serde(flatten)]
    pub outcome: LookupOutcome,
}

/// What the agent should do with a pack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "lowercase")]
pub enum Decision {
    /// Trust is at or above the threshold.
    Act,
    /// Below the threshold: hand to a human, with reasons.
    Escalate {
        /// Why.
        reasons: Vec<String>,
    },
}

/// The grade of one memory in a pack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryGrade {
    /// The memory.
    pub id: MemoryId,
    /// Trust in 0..=1.
    pub trust: f64,
    /// Whether it bears on the decision (counted in the pack's min).
    pub load_bearing: bool,
    /// How the trust was reached.
    pub basis: String,
}

/// A grounding substitution: a stale value caught and replaced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Substitution {
    /// The stale memory (now tombstoned).
    pub stale: MemoryId,
    /// The corrected memory.
    pub fresh: MemoryId,
    /// The source that corrected it.
    pub source: String,
    /// Old value.
    pub old_value: String,
    /// New value.
    pub new_value: String,
}

/// What the agent's turn is about, for the assessor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The query / instruction.
    pub query: String,
    /// The claim the task is about, if known: `(entity, attribute)`.
    pub about: Option<(String, String)>,
}

/// The assessor's verdict on a pack, with the corrections it asks for. As the assessor returns
/// it, `pack` is the pack it was given; once the corrections are applied
/// ([`Assessment::settle`]), `pack` is the final pack (corrected memories in place).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Assessment {
    /// The pack: as assessed, then (settled) as corrected.
    pub pack: Pack,
    /// Pack trust = min over load-bearing memories.
    pub trust: f64,
    /// The threshold used.
    pub threshold: f64,
    /// Act or escalate.
    pub decision: Decision,
    /// Per-memory grades.
    pub grades: Vec<MemoryGrade>,
    /// Grounding substitutions made (filled when the corrections are applied).
    pub substitutions: Vec<Substitution>,
    /// Every system-of-record lookup made (source, time taken, outcome).
    #[serde(default)]
    pub lookups: Vec<GroundingLookup>,
    /// The write-backs the assessor asks for, in pack order (applied after assessment).
    #[serde(default)]
    pub corrections: Vec<crate::correction::Correction>,
    /// The claim `(entity, attribute)` the assessor took the task to be about when the task
    /// named none (`Task::about` empty): the query names a recalled claim's entity and
    /// attribute. None when the task named its claim, or the query names none.
    #[serde(default)]
    pub inferred_about: Option<(String, String)>,
}

/// Grades a recall pack and decides act or escalate. An assessor only reads: what it wants
/// written back (a stale value superseded by a system of record's, a confirmation) it returns
/// as `Assessment::corrections`, and the caller applies them.
#[async_trait]
pub trait Assessor: Send + Sync {
    /// Assess `pack` for `task` at `now`.
    async fn assess(&self, task: &Task, pack: Pack, now: Timestamp) -> Result<Assessment>;
}

#[cfg(test)]
mod door_input_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn search_modes_parse_with_their_aliases_and_refuse_the_rest() {
        assert_eq!("BM25".parse::<SearchMode>().unwrap(), SearchMode::Lexical);
        assert_eq!(" vector ".parse::<SearchMode>().unwrap(), SearchMode::Dense);
        assert_eq!("hybrid".parse::<SearchMode>().unwrap(), SearchMode::Hybrid);
        let e = "fuzzy".parse::<SearchMode>().unwrap_err().to_string();
        assert!(e.contains("\"fuzzy\"") && e.contains("lexical (or bm25)"), "{e}");
        for m in [SearchMode::Lexical, SearchMode::Dense, SearchMode::Hybrid] {
            assert_eq!(m.as_str().parse::<SearchMode>().unwrap(), m);
        }
    }

    #[test]
    fn a_claim_key_is_text_or_parts_and_never_half_empty() {
        let k: ClaimKey = " Ben | phone ".parse().unwrap();
        assert_eq!((k.entity.as_str(), k.attribute.as_str()), ("Ben", "phone"));
        assert_eq!(k.to_string(), "Ben | phone");
        for bad in ["Ben", "Ben |", "| phone", "a | b | c", ""] {
            assert!(bad.parse::<ClaimKey>().is_err(), "{bad:?}");
        }
        let text: ClaimKey = serde_json::from_str("\"Ben | phone\"").unwrap();
        let parts: ClaimKey = serde_json::from_str(r#"{"entity": "Ben", "attribute": "phone"}"#).unwrap();
        assert_eq!(text, parts);
        assert!(serde_json::from_str::<ClaimKey>(r#"{"entity": "Ben", "attribute": " "}"#).is_err());
        let smuggled = r#"{"entity": "Ana | allergy | none
[SEM] Northwind", "attribute": "approver"}"#;
        assert!(serde_json::from_str::<ClaimKey>(smuggled).is_err(), "no separator or line break inside a part");
    }
}
