//! A data directory that cannot be written (a read-only mount, a backup, a directory without
//! write permission) still serves reads: no lock is taken (no writer can run there), the
//! store opens read-only (its writes fail saying so), and the index on disk is searched as it
//! is, caught up with the store in memory when it is behind (the same store and generation);
//! otherwise (another store's, damaged), since it cannot be repaired there, one is built in
//! memory from the store.
//!
//! So are reads beside a writer (a running `mnemo serve` or `reindex`): they never wait for its
//! lock. A rebuild is written beside the index in place and put in place when it ends, so a
//! reader beside `reindex` searches the index before it instead of building its own.
//!
//! A long-lived reader ([`Runtime::build_reader`]: an embedded read-only Engine) never keeps
//! the lock, so a writer (`mnemo serve`) can start beside it at any time; its store is opened
//! read-only and its index is built in memory, so that it catches up with what such a writer
//! writes after it opened.
use std::path::Path;
use std::sync::Arc;

use mnemo_contract::{Clock, Grounder};

use crate::config::Config;
use crate::error::AgentError;
use crate::runtime::{Access, ReasonerBuild, Runtime};

tokio::task_local! {
    /// Set while [`Runtime::build_reader`] builds its runtime: the build reads without the lock.
    static WITHOUT_LOCK: ();
}

impl Runtime {
    /// A runtime that only reads `data_dir` and never holds its lock, for a reader that stays
    /// open (an embedded read-only Engine): a writer can start beside it at any time. The store
    /// is opened read-only (every write is refused with a `read_only` error) and the index is
    /// built in memory from the store: an index on disk opened read-only could not be caught up
    /// with what a writer writes after the reader opened, and each recall catches the one in
    /// memory up with the store first.
    ///
    /// With no writer present, a short build holding the lock comes first and does what a
    /// reader cannot: it creates the store of a new directory and brings the index on disk up
    /// to the store; the lock is released before the reader opens. Beside a writer, or in a
    /// directory that cannot be written, the reader opens at once. The model is never built
    /// (readers do not call it).
    pub async fn build_reader(
        config: &Config,
        data_dir: &Path,
        clock: Arc<dyn Clock>,
        extra_grounders: Vec<Arc<dyn Grounder>>,
    ) -> Result<Runtime, AgentError> {
        let build = |grounders| {
            Runtime::build_for(
                config,
                data_dir,
                clock.clone(),
                grounders,
                &|_, _| {},
                ReasonerBuild::OnFirstCall,
                Access::Read,
            )
        };
        std::fs::create_dir_all(data_dir).map_err(|e| AgentError::Io {
            action: "create the data directory",
            file: data_dir.display().to_string(),
            error: e,
        })?;
        // No writer holds the lock (and the directory can be written): prepare, then let go.
        if let Ok(free) = crate::lock::lock_data_dir(data_dir, std::time::Duration::ZERO).await {
            drop(free);
            let prepared = build(extra_grounders.clone()).await?;
            if let Err(e) = prepared.engine().flush_index().await {
                tracing::debug!(error = %e, "the index could not be saved before opening the reader");
            }
            drop(prepared);
        }
        WITHOUT_LOCK.scope((), build(extra_grounders)).await
    }
}

/// The data directory's lock, or None when the command reads without it (said in the log):
/// - a reader that never keeps the lock is being built ([`Runtime::build_reader`]);
/// - the directory cannot be written (no writer can run there);
/// - `reads_only`, and another process (a running `mnemo serve`) holds the lock: the command
///   reads beside it at once instead of waiting for it.
///
/// A writer waits for the lock (`MNEMO_LOCK_TIMEOUT_SECS`).
pub async fn lock_or_read_only(data_dir: &Path, reads_only: bool) -> Result<Option<std::fs::File>, AgentError> {
    if reads_only && WITHOUT_LOCK.try_with(|_| ()).is_ok() {
        tracing::info!(
            data_dir = %data_dir.display(),
            "a reader that keeps no lock: the store read-only, the index built in memory (caught up with the store at each recall)"
        );
        return Ok(None);
    }
    let wait = if reads_only { std::time::Duration::ZERO } else { crate::lock::lock_timeout()? };
    match crate::lock::lock_data_dir(data_dir, wait).await {
        Ok(f) => Ok(Some(f)),
        Err(AgentError::LockTimeout { path, holder, .. }) if reads_only => {
            tracing::info!(
                lock = %path.display(),
                holder = %holder,
                "the data directory is held by a writer: reading beside it (the store read-only; the index on disk, caught up with the store in memory)"
            );
            Ok(None)
        }
        Err(AgentError::Io { ref error, ref file, .. }) if is_read_only(error) => {
            tracing::warn!(
                lock = %file,
                %error,
                "the data directory cannot be written: reads only (the index on disk, caught up with the store in memory)"
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The store settings that open a store kind read-only (kinds without such a setting as they
/// are: a database server has no data-directory lock to share).
pub fn store_read_only(kind: &str, settings: &toml::Table) -> toml::Table {
    let mut s = settings.clone();
    if kind == "sqlite" && s.get("in_memory").and_then(toml::Value::as_bool) != Some(true) {
        s.insert("read_only".to_string(), toml::Value::Boolean(true));
    }
    s
}

/// Whether an OS error says the place cannot be written.
pub fn is_read_only(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied)
}

/// The settings that open an index kind's on-disk form read-only (None: the kind has none, or
/// a reader that stays open is being built: its index is kept in memory, to be caught up with
/// a writer that starts beside it).
pub fn index_on_disk(kind: &str, settings: &toml::Table) -> Option<toml::Table> {
    if WITHOUT_LOCK.try_with(|_| ()).is_ok() {
        return None;
    }
    (kind == "tantivy" && settings.get("in_memory").and_then(toml::Value::as_bool) != Some(true)).then(|| {
        let mut s = settings.clone();
        s.insert("read_only".to_string(), toml::Value::Boolean(true));
        s
    })
}

/// The settings that keep an index kind in memory (kinds with an on-disk form).
pub fn index_in_memory(kind: &str, settings: &toml::Table) -> toml::Table {
    let mut s = settings.clone();
    if kind == "tantivy" {
        s.insert("in_memory".to_string(), toml::Value::Boolean(true));
    }
    s
}

/// Whether bringing the index up to the store failed because its files cannot be written (a
/// full disk, a read-only index directory): reads are still served from an index in memory.
pub fn index_cannot_be_saved(sync: &Result<mnemo_core::engine::SyncReport, AgentError>) -> bool {
    matches!(sync, Err(AgentError::Core(e)) if cannot_save(e))
}

/// Whether an index error says its files cannot be written (a full disk, a read-only place).
pub fn cannot_save(e: &mnemo_contract::CoreError) -> bool {
    matches!(e.index_kind(), Some(mnemo_contract::IndexErrorKind::Full | mnemo_contract::IndexErrorKind::ReadOnly))
}
