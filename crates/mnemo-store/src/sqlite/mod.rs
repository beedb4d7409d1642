//! The SQLite [`Store`]: one file (WAL), one write connection, one read connection.
//!
//! - Writes (`record_turn`, `apply`, `touch`) run one at a time on the write connection, on
//!   the caller's thread under `block_in_place` (see `writer`), each in one transaction (see
//!   `write` for the batch semantics and `connection` for durability).
//! - Reads run on a separate connection behind a Mutex; in WAL mode they do not wait for the
//!   writer, and since each read starts a fresh read transaction it sees every write that has
//!   been acknowledged.
//! - In memory, one connection serves both (behind the same Mutex), so a reader never sees a
//!   batch half-applied there either.
//! - Schema changes go through `schema`'s migrator (`PRAGMA user_version`).
mod backup;
mod bounded;
mod chain;
mod check;
mod connection;
mod decay;
mod embedding;
mod erase;
mod ids;
mod in_list;
mod plugin;
mod read;
mod rows;
mod schema;
mod write;
mod writer;

#[cfg(test)]
mod chain_tests;
#[cfg(test)]
mod decay_tests;
#[cfg(test)]
mod erase_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod world_time_tests;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mnemo_contract::{
    CoreError, Memory, MemoryEvent, MemoryId, Namespace, NewTurn, Result, Store, StoreIdentity, Timestamp, Turn,
    WriteOp,
};
use rusqlite::Connection;

pub use check::{damage_marker, Check, Findings, FULL_CHECK_MAX_BYTES};
pub use connection::Synchronous;

use crate::error::{DbResult, StoreError};
use writer::Writer;

/// The SQLite store. Cheap to share behind an `Arc`; dropping it closes the database (a write
/// under way finishes first: it holds the store).
pub struct SqliteStore {
    // Field order matters for Drop: the read connection closes first, so that the write
    // connection is the last one open on the file. Closing the last connection checkpoints
    // the WAL and removes it, which the writer's Drop does off the executor.
    reader: Arc<Mutex<Connection>>,
    /// None when the store was opened read-only.
    writer: Option<Writer>,
    path: Option<PathBuf>,
    /// Why the store was opened read-only (None: it is writable).
    read_only: Option<String>,
    /// What the open check repaired (None: nothing).
    repaired: Option<String>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Open (or create) the store at `path` with `synchronous = NORMAL`: acknowledged writes
    /// survive a process crash. Creates the parent directories. Refuses a file that is not
    /// SQLite, a SQLite file that is not a Mnemo store, or a schema newer than this build.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        Self::open_with(path, Synchronous::Normal)
    }

    /// `open` with an explicit `synchronous` level (`Full` also survives power loss).
    ///
    /// An existing store that cannot be written (a read-only file, directory or mount, e.g. a
    /// mounted backup) is opened read-only instead: every read works, every write fails with
    /// [`StoreError::ReadOnly`] (kind `ReadOnly`) saying why.
    pub fn open_with(path: &Path, sync: Synchronous) -> Result<SqliteStore> {
        Self::open_checked(path, sync, true)
    }

    /// `open_with`, choosing whether the integrity check runs before the store is written
    /// (`true`: [`Check::Auto`]; a damaged index is rebuilt, any other damage refused naming the
    /// file and the fix; the check reads the whole file once).
    pub fn open_checked(path: &Path, sync: Synchronous, quick_check: bool) -> Result<SqliteStore> {
        Self::open_with_check(path, sync, if quick_check { Check::Auto } else { Check::Off })
    }

    /// `open_with`, with the integrity check `check` (see [`Check`]).
    pub fn open_with_check(path: &Path, sync: Synchronous, check: Check) -> Result<SqliteStore> {
        let (write_conn, repaired) = match connection::open_writer(path, sync, check) {
            Ok(c) => c,
            Err(e) if path.exists() && connection::cannot_write(&e, path) => {
                let why = match e.kind() {
                    mnemo_contract::StoreErrorKind::Full => format!("the disk is full: {e}"),
                    _ => e.to_string(),
                };
                tracing::warn!(path = %path.display(), %why, "the store cannot be written: opened read-only");
                return Self::open_read_only_because(path, why);
            }
            Err(e) => return Err(e.into()),
        };
        let reader = connection::open_reader(path)?;
        let writer = Writer::new(Arc::new(Mutex::new(write_conn)));
        Ok(SqliteStore {
            writer: Some(writer),
            reader: Arc::new(Mutex::new(reader)),
            path: Some(path.to_path_buf()),
            read_only: None,
            repaired,
        })
    }

    /// Open an existing store for reading only (nothing is written, not even a WAL switch or
    /// a migration: a store of an older schema is refused).
    pub fn open_read_only(path: &Path) -> Result<SqliteStore> {
        Self::open_read_only_because(path, "opened read-only".to_string())
    }

    fn open_read_only_because(path: &Path, why: String) -> Result<SqliteStore> {
        let reader = connection::open_read_only(path)?;
        Ok(SqliteStore {
            writer: None,
            reader: Arc::new(Mutex::new(reader)),
            path: Some(path.to_path_buf()),
            read_only: Some(why),
            repaired: None,
        })
    }

    /// A fresh, empty store in memory (gone when dropped); same behaviour as a file store.
    pub fn open_in_memory() -> Result<SqliteStore> {
        let conn = Arc::new(Mutex::new(connection::open_memory()?));
        let writer = Writer::new(Arc::clone(&conn));
        Ok(SqliteStore { writer: Some(writer), reader: conn, path: None, read_only: None, repaired: None })
    }

    /// Why the store is read-only (None: it can be written).
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// What the integrity check at open repaired (damaged SQLite indexes rebuilt), said as a
    /// note (also logged as a warning), or None.
    pub fn repaired(&self) -> Option<&str> {
        self.repaired.as_deref()
    }

    /// SQLite's full `integrity_check` of the store file at `path`, on demand (`mnemo verify`):
    /// opened read-only, nothing written. A file too damaged to be opened is one problem (not
    /// an index's); a file that is not a Mnemo store is an error.
    pub fn verify(path: &Path) -> Result<Findings> {
        let conn = match connection::open_read_only(path) {
            Ok(c) => c,
            Err(e) if e.kind() == mnemo_contract::StoreErrorKind::Damaged => {
                let problem = e.to_string();
                return Ok(Findings { problems: vec![problem.clone()], indexes: Vec::new(), other: vec![problem] });
            }
            Err(e) => return Err(e.into()),
        };
        match check::findings(&conn, "integrity_check") {
            Ok(found) => Ok(found),
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
                let problem = e.to_string();
                Ok(Findings { problems: vec![problem.clone()], indexes: Vec::new(), other: vec![problem] })
            }
            Err(e) => Err(StoreError::Sqlite(e).into()),
        }
    }

    /// An error SQLite gave while the store was in use that says the file is damaged: named
    /// (file and fix) and remembered beside the file, so the next open checks it in full.
    fn seen<T>(&self, r: Result<T>) -> Result<T> {
        let Err(e) = r else { return r };
        let Some(path) = self.path.as_deref() else { return Err(e) };
        match &e {
            CoreError::StoreFailure { kind: mnemo_contract::StoreErrorKind::Damaged, source } => {
                match source.downcast_ref::<StoreError>() {
                    Some(StoreError::Sqlite(sqlite)) => {
                        check::mark_damage_seen(path);
                        Err(StoreError::DamageSeen { path: path.to_path_buf(), detail: sqlite.to_string() }.into())
                    }
                    _ => Err(e),
                }
            }
            _ => Err(e),
        }
    }

    /// The writer, or the read-only error.
    fn writer(&self) -> Result<&Writer> {
        self.writer.as_ref().ok_or_else(|| {
            CoreError::from(StoreError::ReadOnly {
                path: self.path.clone().unwrap_or_default(),
                why: self.read_only.clone().unwrap_or_default(),
            })
        })
    }

    /// The database file, or None in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// SQLite's `PRAGMA integrity_check`: an empty list when the database is sound, otherwise
    /// the problems it reports.
    pub fn integrity_check(&self) -> Result<Vec<String>> {
        self.read(|c| {
            let mut stmt = c.prepare("PRAGMA integrity_check").db()?;
            let lines = stmt.query_map([], |r| r.get::<_, String>(0)).db()?;
            let mut problems = Vec::new();
            for line in lines {
                let line = line.db()?;
                if line != "ok" {
                    problems.push(line);
                }
            }
            Ok(problems)
        })
    }

    /// Run a query on the read connection.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let guard = self.reader.lock().map_err(|_| CoreError::from(StoreError::Poisoned))?;
        self.seen(f(&guard))
    }

    /// Run a bounded query (a few rows by key, asked on every recall or index sync) on the read
    /// connection in place, telling the executor this worker blocks: the hand-off to the
    /// blocking pool and back (`read_blocking`) costs ~0.2 ms a call on two cores, more than the
    /// query.
    fn read_in_place<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        crate::blocking::blocking(|| self.read(f))
    }

    /// Run a query on the read connection on a blocking thread: SQLite's file I/O (and the wait
    /// for the connection's Mutex) never holds up the async executor.
    async fn read_blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let reader = Arc::clone(&self.reader);
        let read = tokio::task::spawn_blocking(move || {
            let guard = reader.lock().map_err(|_| CoreError::from(StoreError::Poisoned))?;
            f(&guard)
        })
        .await
        .map_err(|e| CoreError::from(StoreError::ReadTask(e.to_string())))?;
        self.seen(read)
    }
}

/// Changes above the rev asked up to which `changes_since` reads on the write connection.
const FEW_CHANGES: u64 = 64;

#[async_trait]
impl Store for SqliteStore {
    async fn record_turn(&self, turn: NewTurn) -> Result<Turn> {
        self.seen(self.writer()?.run(move |c| write::record_turn(c, turn)).await)
    }

    async fn record_turns(&self, turns: Vec<NewTurn>) -> Result<Vec<Turn>> {
        self.seen(self.writer()?.run(move |c| write::record_turns(c, turns)).await)
    }

    async fn apply(&self, namespace: &Namespace, at: Timestamp, ops: Vec<WriteOp>) -> Result<Vec<MemoryId>> {
        let ns = namespace.clone();
        self.seen(self.writer()?.run(move |c| write::apply(c, &ns, at, ops)).await)
    }

    async fn erase(
        &self,
        namespace: &Namespace,
        at: Timestamp,
        plan: mnemo_contract::erase::ErasePlan,
    ) -> Result<mnemo_contract::erase::ErasureRecord> {
        let ns = namespace.clone();
        self.seen(self.writer()?.run(move |c| erase::erase(c, &ns, at, plan)).await)
    }

    async fn erasures(&self, namespace: &Namespace) -> Result<Vec<mnemo_contract::erase::ErasureRecord>> {
        let ns = namespace.clone();
        self.read_blocking(move |c| erase::erasures(c, &ns)).await
    }

    async fn get_many(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        // A recall's misses.
        self.read_in_place(|c| read::get_many(c, namespace, ids))
    }

    async fn active_by_entities(&self, namespace: &Namespace, entities: &[String]) -> Result<Vec<Memory>> {
        let (ns, entities) = (namespace.clone(), entities.to_vec());
        self.read_blocking(move |c| read::active_by_entities(c, &ns, &entities)).await
    }

    async fn active(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        let ns = namespace.clone();
        self.read_blocking(move |c| read::active(c, &ns)).await
    }

    async fn pinned(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        // Read by every recall the recall cache cannot answer (an index lookup).
        self.read_in_place(|c| read::pinned(c, namespace))
    }

    async fn all_memories(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        let ns = namespace.clone();
        self.read_blocking(move |c| read::all_memories(c, &ns)).await
    }

    async fn claim_memories(&self, namespace: &Namespace, entity: &str, attribute: &str) -> Result<Vec<Memory>> {
        let (ns, e, a) = (namespace.clone(), entity.to_string(), attribute.to_string());
        self.read_blocking(move |c| read::claim_memories(c, &ns, &e, &a)).await
    }

    async fn changed_since(&self, rev: u64, limit: usize) -> Result<Vec<Memory>> {
        // Every write's index sync asks (one row after a single write).
        self.read_in_place(|c| read::changed_since(c, rev, limit))
    }

    async fn changes_since(&self, rev: u64, limit: usize) -> Result<mnemo_contract::Changes> {
        // Every write's index sync asks, right after the write: its four look-ups in one go, on
        // the write connection, whose page cache holds the pages just written. The read
        // connection's page cache is dropped whenever another connection has committed
        // (SQLite's WAL rule), so there the same look-ups read ~15 pages back from the file.
        // Only a few changes, and only when no write holds the connection: a bulk load's sync
        // reads thousands of rows while the next batch is being applied, which must not wait.
        if let Some(writer) = &self.writer {
            let few = writer.try_run(|c| read::changes_since_if_few(c, rev, limit, FEW_CHANGES));
            if let Some(changes) = self.seen(few.transpose())?.flatten() {
                return Ok(changes);
            }
        }
        self.read_in_place(|c| read::changes_since(c, rev, limit))
    }

    async fn max_rev(&self) -> Result<u64> {
        // Every recall asks (the index catch-up check): one b-tree seek on `memories_rev`.
        self.read_in_place(read::max_rev)
    }

    async fn history(&self, namespace: &Namespace, id: MemoryId) -> Result<Vec<MemoryEvent>> {
        let ns = namespace.clone();
        self.read_blocking(move |c| read::history(c, &ns, id)).await
    }

    async fn turns(&self, namespace: &Namespace) -> Result<Vec<Turn>> {
        let ns = namespace.clone();
        self.read_blocking(move |c| read::turns(c, &ns)).await
    }

    async fn latest_turn_at(&self, namespace: &Namespace) -> Result<Option<Timestamp>> {
        let ns = namespace.clone();
        self.read_blocking(move |c| read::latest_turn_at(c, &ns)).await
    }

    async fn touch(&self, namespace: &Namespace, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        let ns = namespace.clone();
        let ids = ids.to_vec();
        self.seen(self.writer()?.run(move |c| write::touch(c, &ns, &ids, at)).await)
    }

    async fn touch_each(&self, namespace: &Namespace, accesses: &[(MemoryId, Timestamp)]) -> Result<()> {
        let ns = namespace.clone();
        let accesses = accesses.to_vec();
        self.seen(self.writer()?.run(move |c| write::touch_each(c, &ns, &accesses)).await)
    }

    async fn turns_by_ids(&self, namespace: &Namespace, ids: &[mnemo_contract::TurnId]) -> Result<Vec<Turn>> {
        let (ns, ids) = (namespace.clone(), ids.to_vec());
        self.read_blocking(move |c| bounded::turns_by_ids(c, &ns, &ids)).await
    }

    async fn turn_by_external_id(&self, namespace: &Namespace, external_id: &str) -> Result<Option<Turn>> {
        let (ns, key) = (namespace.clone(), external_id.to_string());
        self.read_blocking(move |c| bounded::turn_by_external_id(c, &ns, &key)).await
    }

    async fn id_of_local(
        &self,
        namespace: &Namespace,
        kind: mnemo_contract::IdKind,
        local: u32,
    ) -> Result<Option<i64>> {
        let ns = namespace.clone();
        let table = match kind {
            mnemo_contract::IdKind::Memory => ids::Table::Memories,
            mnemo_contract::IdKind::Turn => ids::Table::Turns,
        };
        self.read_blocking(move |c| ids::id_of_local(c, &ns, table, local)).await
    }

    async fn list_memories(&self, namespace: &Namespace, page: &mnemo_contract::ListPage) -> Result<Vec<Memory>> {
        let (ns, page) = (namespace.clone(), page.clone());
        self.read_blocking(move |c| bounded::list_memories(c, &ns, &page)).await
    }

    async fn due_for_decay(
        &self,
        namespace: &Namespace,
        rule: &mnemo_contract::DecayRule,
        page: &mnemo_contract::DuePage,
    ) -> Result<Vec<mnemo_contract::DueMemory>> {
        let (ns, rule, page) = (namespace.clone(), rule.clone(), page.clone());
        match &self.writer {
            Some(writer) => self.seen(writer.run(move |c| decay::due_for_decay(c, &ns, &rule, &page)).await),
            // Read-only: nothing can be recomputed, so another rule is answered by the scan.
            None => {
                let stored = self.read_blocking(|c| decay::stored_rule(c).db()).await?;
                if stored.as_ref() == Some(&rule) {
                    self.read_blocking(move |c| decay::due_page(c, &ns, &page)).await
                } else {
                    Ok(mnemo_contract::decay_due::due_by_scan(self.active(&ns).await?, &rule, &page))
                }
            }
        }
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        self.read_blocking(read::namespaces).await
    }

    async fn identity(&self) -> Result<Option<StoreIdentity>> {
        // Asked at every index sync, with `rev_fingerprint`: point look-ups.
        self.read_in_place(read::identity).map(Some)
    }

    async fn rev_fingerprint(&self, rev: u64) -> Result<Option<String>> {
        self.read_in_place(|c| read::rev_fingerprint(c, rev))
    }

    async fn verify_history(&self) -> Result<Option<Vec<mnemo_contract::chain::ChainReport>>> {
        self.read_blocking(|c| chain::verify_all(c).map(Some)).await
    }

    async fn history_chain(
        &self,
        namespace: &Namespace,
        after: i64,
        limit: usize,
    ) -> Result<Option<Vec<mnemo_contract::chain::ChainRecord>>> {
        let ns = namespace.as_str().to_string();
        self.read_blocking(move |c| chain::page(c, &ns, after, limit).map(Some)).await
    }

    async fn chain_heads(&self) -> Result<Vec<mnemo_contract::chain::ChainHead>> {
        self.read_blocking(chain::heads).await
    }

    async fn backup_to(&self, dest: &Path) -> Result<mnemo_contract::BackupInfo> {
        let dest = dest.to_path_buf();
        self.read_blocking(move |c| backup::backup_to(c, &dest)).await
    }

    async fn replace_from_backup(&self, src: &Path) -> Result<mnemo_contract::BackupInfo> {
        let writer = self.writer()?;
        let (src, staging) = (src.to_path_buf(), backup::staging_path(self.path.as_deref()));
        // Checking and staging the backup reads it whole: on a blocking thread, and before the
        // writer is taken, so the store keeps serving meanwhile.
        let staged = {
            let (src, staging) = (src.clone(), staging.clone());
            tokio::task::spawn_blocking(move || backup::stage(&src, &staging))
                .await
                .map_err(|e| CoreError::from(StoreError::ReadTask(e.to_string())))??
        };
        writer.run(move |c| backup::replace(c, staged, &staging, &src)).await
    }
}
