//! A data directory that cannot be written (a read-only mount, a backup, a directory without
//! write permission) still serves reads: no lock is taken (no writer can run there), the
//! store opens read-only (its writes fail saying so), and the index on disk is searched as it
//! is when it is current (same store, generation and revision); otherwise, since it can be
//! neither repaired nor caught up there, one is built in memory from the store.
use std::path::Path;

use crate::error::AgentError;

/// The data directory's lock, or None when the command reads without it (said in the log):
/// - the directory cannot be written (no writer can run there);
/// - `reads_only`, and another process (a running `mnemo serve`) holds the lock: the command
///   reads beside it at once instead of waiting for it.
///
/// A writer waits for the lock (`MNEMO_LOCK_TIMEOUT_SECS`).
pub async fn lock_or_read_only(data_dir: &Path, reads_only: bool) -> Result<Option<std::fs::File>, AgentError> {
    let wait = if reads_only { std::time::Duration::ZERO } else { crate::lock::lock_timeout() };
    match crate::lock::lock_data_dir(data_dir, wait).await {
        Ok(f) => Ok(Some(f)),
        Err(AgentError::LockTimeout { path, holder, .. }) if reads_only => {
            tracing::info!(
                lock = %path.display(),
                holder = %holder,
                "the data directory is held by a writer: reading beside it (the store read-only; the index on disk as it is when current, else one built in memory)"
            );
            Ok(None)
        }
        Err(AgentError::Io { ref error, ref file, .. }) if is_read_only(error) => {
            tracing::warn!(
                lock = %file,
                %error,
                "the data directory cannot be written: reads only (the index on disk is searched as it is when current, else one is built in memory)"
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

/// The settings that open an index kind's on-disk form read-only (None: the kind has none).
pub fn index_on_disk(kind: &str, settings: &toml::Table) -> Option<toml::Table> {
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
pub fn cannot_save(e: &mnemo_core::CoreError) -> bool {
    matches!(e.index_kind(), Some(mnemo_core::IndexErrorKind::Full | mnemo_core::IndexErrorKind::ReadOnly))
}
