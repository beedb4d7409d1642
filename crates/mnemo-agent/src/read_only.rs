//! A data directory that cannot be written (a read-only mount, a backup, a directory without
//! write permission) still serves reads: no lock is taken (no writer can run there), the
//! store opens read-only (its writes fail saying so) and the index is built in memory from the
//! store, since the one on disk can be neither repaired nor caught up.
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
                "the data directory cannot be written: reads only (the index is built in memory)"
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Whether an OS error says the place cannot be written.
pub fn is_read_only(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied)
}

/// Keep the index of a read-only data directory in memory (kinds with an on-disk form).
pub fn index_in_memory(kind: &str, settings: &mut toml::Table) {
    if kind == "tantivy" {
        settings.insert("in_memory".to_string(), toml::Value::Boolean(true));
    }
}
