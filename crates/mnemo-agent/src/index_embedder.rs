//! Which embedder the index's vectors came from, kept beside the data
//! (`<data dir>/index-embedder`: `model id` TAB `dims`).
//!
//! The store keeps each memory's vector with its model id, and the engine re-embeds, for the
//! index, every memory whose stored vector is of another model. But a persistent index that is
//! already up to date would keep the old model's vectors: queries of the new model would be
//! compared with them (an error when the dimensions differ, silently wrong answers when they
//! match). So when the configured embedder is not the one recorded here, the index is rebuilt
//! from the store (re-embedding for the index) before the runtime is used; a directory without
//! the record (written before it existed) is rebuilt once.
use std::path::Path;

use mnemo_core::engine::SyncReport;
use mnemo_core::Engine;

use crate::error::AgentError;

const FILE: &str = "index-embedder";

fn identity(engine: &Engine) -> String {
    format!("{}\t{}\n", engine.embedder_model(), engine.embedding_dims())
}

/// Bring the index up to the store, rebuilding it first if its vectors came from another
/// embedder; then record the current one.
pub async fn sync(
    engine: &Engine,
    data_dir: &Path,
    progress: &(dyn Fn(u64, u64) + Send + Sync),
) -> Result<SyncReport, AgentError> {
    let path = data_dir.join(FILE);
    let want = identity(engine);
    let recorded = match crate::blocking::blocking(|| std::fs::read_to_string(&path)) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(AgentError::Io { action: "read", file: path.display().to_string(), error }),
    };
    let unchanged = recorded.as_deref() == Some(want.as_str());
    let report = match recorded {
        Some(r) if r == want => engine.sync_index(progress).await?,
        // Nothing stored yet: nothing to re-embed.
        None if engine.store_rev().await? == 0 => engine.sync_index(progress).await?,
        _ => engine.rebuild_index(progress).await?,
    };
    if unchanged {
        // Nothing to record: a command on a full disk or a read-only directory writes nothing.
        return Ok(report);
    }
    let tmp = data_dir.join(format!("{FILE}.tmp"));
    match crate::blocking::blocking(|| std::fs::write(&tmp, &want).and_then(|()| std::fs::rename(&tmp, &path))) {
        Ok(()) => {}
        // A read-only data directory (its index lives in memory and is rebuilt every time) or a
        // full disk: without the record the next command rebuilds again, which is safe.
        Err(error) if crate::read_only::is_read_only(&error) || error.kind() == std::io::ErrorKind::StorageFull => {
            let _ = std::fs::remove_file(&tmp);
            tracing::warn!(file = %path.display(), %error, "the embedder record cannot be written; the next command rebuilds the index again")
        }
        Err(error) => return Err(AgentError::Io { action: "write", file: path.display().to_string(), error }),
    }
    Ok(report)
}
