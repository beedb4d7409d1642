//! The PostgreSQL [`Store`]. Many processes may share one schema: batches of a namespace are
//! serialised by an advisory lock, revisions are handed out in commit order (see `write`).
mod bounded;
mod chain;
mod decay;
mod erase;
mod ids;
mod import;
mod lock;
mod read;
mod rows;
mod schema;
mod write;

use async_trait::async_trait;
use mnemo_contract::{
    CoreError, Memory, MemoryEvent, MemoryId, Namespace, NamespaceGuard, NewTurn, Result, Store, StoreErrorKind,
    Timestamp, Turn, TurnId, WriteOp,
};
use tokio::sync::OnceCell;

use crate::db::{Db, Scope};
use crate::error::{DbContext, PgError};
use crate::settings::PgSettings;
use read::On;

/// The PostgreSQL store. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct PostgresStore {
    db: Db,
    ready: OnceCell<()>,
}

impl PostgresStore {
    /// A store on `settings` (connects and migrates at first use).
    pub fn new(settings: &PgSettings) -> std::result::Result<PostgresStore, PgError> {
        Ok(PostgresStore { db: Db::connect(settings)?, ready: OnceCell::new() })
    }

    /// A store on `db`.
    pub fn with_db(db: Db) -> PostgresStore {
        PostgresStore { db, ready: OnceCell::new() }
    }

    /// The database handle (schema, pool).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Create or migrate the schema now (otherwise done at first use).
    pub async fn migrate(&self) -> Result<()> {
        self.ready
            .get_or_try_init(|| async {
                self.db.migrate("store", schema::STEPS, schema::GRANTS).await?;
                chain::backfill_once(&self.db).await
            })
            .await?;
        Ok(())
    }
}

/// Run `$body` with `tx` a transaction scoped to `$scope`, committed after.
macro_rules! in_tx {
    ($self:ident, $scope:expr, |$tx:ident| $body:expr) => {{
        $self.migrate().await?;
        let mut client = $self.db.client().await?;
        let $tx = $self.db.begin(&mut client, $scope).await?;
        let out = $body;
        $tx.commit().await.db("commit")?;
        Ok(out)
    }};
}

impl PostgresStore {
    /// Whether the store holds nothing (no turn, no memory): `import` needs that.
    pub async fn is_empty(&self) -> Result<bool> {
        in_tx!(self, Scope::All, |tx| {
            let r = read::rows(
                &tx,
                "SELECT (SELECT count(*) FROM turns) + (SELECT count(*) FROM memories) + (SELECT count(*) FROM memory_events)",
                &[],
            )
            .await?;
            let n: i64 = match r.first() {
                Some(row) => row.try_get(0).db("count rows")?,
                None => 0,
            };
            n == 0
        })
    }

    /// Import one namespace of another store as it is (ids, revisions, history): for moving a
    /// data directory onto PostgreSQL. Call [`PostgresStore::finish_import`] after the last.
    /// The imported rows are chained (see `mnemo_contract::chain`) in `chain_order` (the
    /// source's chain as (kind, id), so that the same rows give the same chain head; rows it
    /// leaves out follow in the backfill order).
    pub async fn import_namespace(
        &self,
        namespace: &Namespace,
        turns: &[Turn],
        memories: &[Memory],
        events: &[MemoryEvent],
        chain_order: &[(mnemo_contract::chain::EntryKind, i64)],
    ) -> Result<()> {
        in_tx!(self, Scope::Namespace(namespace), |tx| {
            write::lock_namespace(&tx, self.db.schema(), namespace).await?;
            import::namespace(&tx, namespace, turns, memories, events).await?;
            chain::chain_unchained(&tx, namespace, chain_order).await?
        })
    }

    /// Move the id and revision sequences past everything imported.
    pub async fn finish_import(&self) -> Result<()> {
        in_tx!(self, Scope::All, |tx| import::bump_sequences(&tx).await?)
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn record_turn(&self, t: NewTurn) -> Result<Turn> {
        in_tx!(self, Scope::Namespace(&t.namespace), |tx| {
            let ids = ids::next(&tx, &t.namespace, ids::Table::Turns, 1).await?;
            let id = ids
                .first()
                .ok_or_else(|| CoreError::store_message(StoreErrorKind::Other, "no turn id was allocated"))?;
            let rows = read::rows(
                &tx,
                "INSERT INTO turns (id, namespace, source, at, text, external_id) VALUES ($1, $2, $3, $4, $5, $6) \
                 RETURNING id",
                &[id, &t.namespace.as_str(), &t.source, &t.at.0, &t.text, &t.external_id],
            )
            .await?;
            let id: i64 = rows
                .first()
                .ok_or_else(|| CoreError::store_message(StoreErrorKind::Other, "INSERT INTO turns returned no id"))?
                .try_get(0)
                .db("turn id")?;
            let content = mnemo_contract::chain::Content::Turn(mnemo_contract::chain::TurnContent::of(&t, id));
            chain::append(&tx, &t.namespace, &[content]).await?;
            Turn {
                id: TurnId(id),
                namespace: t.namespace,
                source: t.source,
                at: t.at,
                text: t.text,
                external_id: t.external_id,
            }
        })
    }

    async fn apply(&self, namespace: &Namespace, at: Timestamp, ops: Vec<WriteOp>) -> Result<Vec<MemoryId>> {
        mnemo_contract::transition::check_batch_refs(&ops)?;
        if ops.is_empty() {
            return Ok(vec![]);
        }
        in_tx!(self, Scope::Namespace(namespace), |tx| {
            write::lock_namespace(&tx, self.db.schema(), namespace).await?;
            write::apply(&tx, self.db.schema(), namespace, at, ops).await?
        })
    }

    async fn erase(
        &self,
        namespace: &Namespace,
        at: Timestamp,
        plan: mnemo_contract::erase::ErasePlan,
    ) -> Result<mnemo_contract::erase::ErasureRecord> {
        self.migrate().await?;
        let mut client = self.db.client().await?;
        let tx = self.db.begin(&mut client, Scope::Namespace(namespace)).await?;
        let written = match write::lock_namespace(&tx, self.db.schema(), namespace).await {
            Ok(()) => erase::erase(&tx, self.db.schema(), namespace, at, plan).await,
            Err(e) => Err(e),
        };
        let record = match written {
            Ok(r) => {
                tx.commit().await.db("commit")?;
                r
            }
            Err(e) => {
                // Rolled back before answering (an erasure refused late holds row locks).
                let _ = tx.rollback().await;
                return Err(e);
            }
        };
        self.db.vacuum(erase::TOUCHED).await?;
        Ok(record)
    }

    async fn erasures(&self, namespace: &Namespace) -> Result<Vec<mnemo_contract::erase::ErasureRecord>> {
        in_tx!(self, Scope::Namespace(namespace), |tx| erase::erasures(&tx, namespace).await?)
    }

    async fn get_many(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        self.migrate().await?;
        read::get_many(&On::Db(&self.db), namespace, ids).await
    }

    async fn active_by_entities(&self, namespace: &Namespace, entities: &[String]) -> Result<Vec<Memory>> {
        self.migrate().await?;
        read::active_by_entities(&On::Db(&self.db), namespace, entities).await
    }

    async fn active(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        self.migrate().await?;
        read::active(&On::Db(&self.db), namespace).await
    }

    async fn pinned(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        self.migrate().await?;
        read::pinned(&On::Db(&self.db), namespace).await
    }

    async fn all_memories(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        self.migrate().await?;
        read::all_memories(&On::Db(&self.db), namespace).await
    }

    async fn claim_memories(&self, namespace: &Namespace, entity: &str, attribute: &str) -> Result<Vec<Memory>> {
        self.migrate().await?;
        read::claim_memories(&On::Db(&self.db), namespace, entity, attribute).await
    }

    async fn changed_since(&self, rev: u64, limit: usize) -> Result<Vec<Memory>> {
        self.migrate().await?;
        read::changed_since(&On::Db(&self.db), rev, limit).await
    }

    async fn max_rev(&self) -> Result<u64> {
        self.migrate().await?;
        read::max_rev(&On::Db(&self.db)).await
    }

    async fn history(&self, namespace: &Namespace, id: MemoryId) -> Result<Vec<MemoryEvent>> {
        self.migrate().await?;
        read::history(&On::Db(&self.db), namespace, id).await
    }

    async fn turns(&self, namespace: &Namespace) -> Result<Vec<Turn>> {
        self.migrate().await?;
        read::turns(&On::Db(&self.db), namespace).await
    }

    async fn latest_turn_at(&self, namespace: &Namespace) -> Result<Option<Timestamp>> {
        self.migrate().await?;
        read::latest_turn_at(&On::Db(&self.db), namespace).await
    }

    async fn touch(&self, namespace: &Namespace, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.migrate().await?;
        write::touch(&self.db, namespace, ids, at).await
    }

    async fn turns_by_ids(&self, namespace: &Namespace, ids: &[TurnId]) -> Result<Vec<Turn>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        in_tx!(self, Scope::Namespace(namespace), |tx| bounded::turns_by_ids(&tx, namespace, ids).await?)
    }

    async fn turn_by_external_id(&self, namespace: &Namespace, external_id: &str) -> Result<Option<Turn>> {
        in_tx!(self, Scope::Namespace(namespace), |tx| bounded::turn_by_external_id(&tx, namespace, external_id)
            .await?)
    }

    async fn id_of_local(
        &self,
        namespace: &Namespace,
        kind: mnemo_contract::IdKind,
        local: u32,
    ) -> Result<Option<i64>> {
        let table = match kind {
            mnemo_contract::IdKind::Memory => ids::Table::Memories,
            mnemo_contract::IdKind::Turn => ids::Table::Turns,
        };
        in_tx!(self, Scope::Namespace(namespace), |tx| ids::id_of_local(&tx, namespace, table, local).await?)
    }

    async fn list_memories(&self, namespace: &Namespace, page: &mnemo_contract::ListPage) -> Result<Vec<Memory>> {
        in_tx!(self, Scope::Namespace(namespace), |tx| bounded::list_memories(&tx, namespace, page).await?)
    }

    async fn due_for_decay(
        &self,
        namespace: &Namespace,
        rule: &mnemo_contract::DecayRule,
        page: &mnemo_contract::DuePage,
    ) -> Result<Vec<mnemo_contract::DueMemory>> {
        in_tx!(self, Scope::Namespace(namespace), |tx| {
            // The namespace's writer lock: a recomputation never races a write's due time.
            write::lock_namespace(&tx, self.db.schema(), namespace).await?;
            decay::due_for_decay(&tx, namespace, rule, page).await?
        })
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        self.migrate().await?;
        read::namespaces(&On::Db(&self.db)).await
    }

    async fn verify_history(&self) -> Result<Option<Vec<mnemo_contract::chain::ChainReport>>> {
        self.migrate().await?;
        chain::verify_all(&self.db).await.map(Some)
    }

    async fn history_chain(
        &self,
        namespace: &Namespace,
        after: i64,
        limit: usize,
    ) -> Result<Option<Vec<mnemo_contract::chain::ChainRecord>>> {
        self.migrate().await?;
        chain::page(&self.db, namespace, after, limit).await.map(Some)
    }

    async fn chain_heads(&self) -> Result<Vec<mnemo_contract::chain::ChainHead>> {
        self.migrate().await?;
        chain::heads(&self.db).await
    }

    async fn lock_namespace(&self, namespace: &Namespace) -> Result<NamespaceGuard> {
        self.migrate().await?;
        lock::lock(&self.db, namespace).await
    }
}
