//! Backups of the whole store, and replacing the store's content with one. A replacement is the
//! one thing that moves the store's generation: the index records the generation it was built
//! from, so an index of the content before is rebuilt, never served with the restored one.
use std::path::Path;

use super::{Engine, SyncReport};
use crate::error::Result;
use crate::traits::BackupInfo;

impl Engine {
    /// Write a consistent copy of the whole store to `dest` (a new file) while serving.
    pub async fn backup(&self, dest: &Path) -> Result<BackupInfo> {
        self.store.backup_to(dest).await
    }

    /// One page of the tamper-evident history of `namespace` as the store holds it (see
    /// `mnemo_contract::chain`, `Store::history_chain`): what `mnemo export --history` writes.
    /// None: the store keeps no history chain.
    pub async fn history_chain(
        &self,
        namespace: &crate::Namespace,
        after: i64,
        limit: usize,
    ) -> Result<Option<Vec<mnemo_contract::chain::ChainRecord>>> {
        self.store.history_chain(namespace, after, limit).await
    }

    /// Check the history chain of every namespace (None: the store keeps none).
    pub async fn verify_history(&self) -> Result<Option<Vec<mnemo_contract::chain::ChainReport>>> {
        self.store.verify_history().await
    }

    /// Every namespace's recorded chain head.
    pub async fn chain_heads(&self) -> Result<Vec<mnemo_contract::chain::ChainHead>> {
        self.store.chain_heads().await
    }

    /// Replace the whole store's content with the backup at `src`, then bring the index to it
    /// (rebuilt from the restored store: the generation moved). No write of this engine runs
    /// meanwhile, and no sync starts from the watermark of the content before.
    pub async fn restore_backup(
        &self,
        src: &Path,
        progress: &(dyn Fn(u64, u64) + Send + Sync),
    ) -> Result<(BackupInfo, SyncReport)> {
        let info = {
            let _writes = self.write_lock.lock().await;
            let mut applied = self.applied_rev.lock().await;
            let info = self.store.replace_from_backup(src).await?;
            // The next sync checks the index's stamp against the store again (and rebuilds it).
            *applied = None;
            info
        };
        let report = self.sync_index(progress).await?;
        self.index.flush().await?;
        Ok((info, report))
    }
}
