//! A data directory that cannot be written (a read-only mount, a backup, a directory without
//! write permission) still serves reads: no lock is taken (no writer can run there), the
//! store opens read-only (its writes fail saying so), and the index on disk is searched as it
//! is when it is current (same store, generation and revision); otherwise, since it can be
//! neither repaired nor caught up there, one is built in memory from the store.
use std::path::Path;

use crate::error::AgentError;

/// The data directory's lock, or None when the directory cannot be written (said on stderr).
pub async fn lock_or_read_only(data_dir: &Path) -> Result<Option<std::fs::File>, AgentError> {
    match crate::lock::lock_data_dir(data_dir, crate::lock::lock_timeout()).await {
        Ok(f) => Ok(Some(f)),
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

/// For a command that only reads: the lock if it is free at once, else None — another
/// process (a running `mnemo serve`) holds it, and the command reads beside it instead of
/// waiting (said in the log, with who holds it). A directory that cannot be written: None too.
pub async fn lock_or_read_beside(data_dir: &Path) -> Result<Option<std::fs::File>, AgentError> {
    match crate::lock::lock_data_dir(data_dir, std::time::Duration::ZERO).await {
        Ok(f) => Ok(Some(f)),
        Err(AgentError::LockTimeout { path, holder, .. }) => {
            tracing::info!(
                lock = %path.display(),
                holder = %holder,
                "the data directory is held by a writer: reading beside it (the store read-only; the index on disk as it is when current, else one built in memory)"
            );
            Ok(None)
        }
        Err(AgentError::Io { ref error, ref file, .. }) if is_read_only(error) => {
            tracing::warn!(lock = %file, %error, "the data directory cannot be written: reads only");
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
