//! Backups of the whole store, and replacing the store's content with one. A replacement is the
//! one thing that moves the store's generation: the index records the generation it was built
//! from, so an index of the content before is rebuilt, never served with the restored one.
use std::path::Path;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::{Engine, SyncReport};
use mnemo_contract::erase::{ErasePlan, ErasureRecord, ERASED_TEXT};
use mnemo_contract::error::Result;
use mnemo_contract::model::{MemoryId, Namespace, TurnId};
use mnemo_contract::time::Timestamp;
use mnemo_contract::BackupInfo;

/// What a restore did with the erasures of the store it replaced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoredErasures {
    /// Erasures the store held before the restore.
    pub known: usize,
    /// Erased content the backup held again, erased again.
    pub reapplied: Vec<Reintroduced>,
    /// Erased content the backup held again, left there (`--keep-erased`).
    pub reintroduced: Vec<Reintroduced>,
    /// Erasures not looked for: the backup is of another store (its ids name other rows).
    pub not_checked: usize,
    /// Erasures whose re-application failed (each with why): the content they erased may be
    /// back; erase it again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// The rows of one erasure a restored backup held again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reintroduced {
    /// Its namespace.
    pub namespace: String,
    /// The erasure (of the store before the restore).
    pub erasure: i64,
    /// When it was made.
    pub at: Timestamp,
    /// Its reason.
    pub reason: String,
    /// Its memories the backup held with their content.
    pub memories: Vec<MemoryId>,
    /// Its turns the backup held with their content.
    pub turns: Vec<TurnId>,
}

impl RestoredErasures {
    /// In words, one line per erasure (empty when the store had none).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let ids = |r: &Reintroduced| {
            let mut v: Vec<String> = r.memories.iter().map(|m| format!("memory {m}")).collect();
            v.extend(r.turns.iter().map(|t| format!("turn {t}")));
            v.join(", ")
        };
        for r in &self.reapplied {
            out.push_str(&format!(
                "re-applied erasure {} of {} ({}) in {}: {}\n",
                r.erasure,
                r.at.to_rfc3339(),
                r.reason,
                r.namespace,
                ids(r)
            ));
        }
        for r in &self.reintroduced {
            out.push_str(&format!(
                "RE-INTRODUCED (--keep-erased) what erasure {} of {} ({}) erased in {}: {}\n",
                r.erasure,
                r.at.to_rfc3339(),
                r.reason,
                r.namespace,
                ids(r)
            ));
        }
        for f in &self.failed {
            out.push_str(&format!(
                "COULD NOT RE-APPLY {f}: what it erased may be back — erase it again (mnemo erase)\n"
            ));
        }
        if self.not_checked > 0 {
            out.push_str(&format!(
                "the backup is of another store: the {} erasure(s) of the store replaced were not re-applied\n",
                self.not_checked
            ));
        } else if self.known > 0 && self.reapplied.is_empty() && self.reintroduced.is_empty() {
            out.push_str(&format!(
                "the backup holds nothing of the {} erasure(s) made before the restore\n",
                self.known
            ));
        }
        out
    }
}

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
        namespace: &mnemo_contract::Namespace,
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
    /// meanwhile, and no sync starts from the watermark of the content before. The erasures of
    /// the store before are re-applied to the restored content (see
    /// [`Engine::restore_backup_with`]).
    pub async fn restore_backup(
        &self,
        src: &Path,
        progress: &(dyn Fn(u64, u64) + Send + Sync),
    ) -> Result<(BackupInfo, SyncReport)> {
        let (info, sync, _) = self.restore_backup_with(src, false, progress).await?;
        Ok((info, sync))
    }

    /// [`Engine::restore_backup`], saying what becomes of the erasures: those of the store
    /// before are read first; an older backup holds content erased since, which is erased again
    /// (each re-application is a new erasure record, "re-applied after a restore: …") — or,
    /// with `keep_erased`, left in the restored store and listed as re-introduced. A backup of
    /// another store (another identity) has other rows under the same ids: nothing is
    /// re-applied, and the answer says so.
    pub async fn restore_backup_with(
        &self,
        src: &Path,
        keep_erased: bool,
        progress: &(dyn Fn(u64, u64) + Send + Sync),
    ) -> Result<(BackupInfo, SyncReport, RestoredErasures)> {
        let (info, erasures) = {
            let _writes = self.write_lock.lock().await;
            let mut applied = self.applied_rev.lock().await;
            let before = self.erasures_before_restore().await?;
            let identity = self.store.identity().await?;
            let info = self.store.replace_from_backup(src).await?;
            // The next sync checks the index's stamp against the store again (and rebuilds it).
            *applied = None;
            // Without both identities nothing says the ids name the same rows: not re-applied
            // (and said so), rather than erasing rows that merely share an id.
            let same_store = match (&identity, &info.identity) {
                (Some(a), Some(b)) => a.id == b.id,
                _ => false,
            };
            let erasures = self.reapply_erasures(before, keep_erased, same_store).await?;
            (info, erasures)
        };
        let report = self.sync_index(progress).await?;
        self.index.flush().await?;
        Ok((info, report, erasures))
    }

    /// Every erasure of the store, with the text each redacted turn has now.
    async fn erasures_before_restore(&self) -> Result<Vec<(ErasureRecord, Vec<(TurnId, String)>)>> {
        let mut out = Vec::new();
        for ns in self.store.namespaces().await? {
            for e in self.store.erasures(&ns).await? {
                let texts =
                    self.store.turns_by_ids(&ns, &e.redacted).await?.into_iter().map(|t| (t.id, t.text)).collect();
                out.push((e, texts));
            }
        }
        Ok(out)
    }

    /// What of `before` the restored store holds again, re-applied (or, `keep_erased`, listed).
    async fn reapply_erasures(
        &self,
        before: Vec<(ErasureRecord, Vec<(TurnId, String)>)>,
        keep_erased: bool,
        same_store: bool,
    ) -> Result<RestoredErasures> {
        let mut out = RestoredErasures { known: before.len(), ..RestoredErasures::default() };
        if !same_store {
            out.not_checked = before.len();
            return Ok(out);
        }
        for (e, texts) in before {
            let ns = Namespace::new(&e.namespace)?;
            let erased_now: HashSet<MemoryId> =
                self.store.erasures(&ns).await?.into_iter().flat_map(|r| r.memories).collect();
            let memories: Vec<MemoryId> = self
                .store
                .get_many(&ns, &e.memories)
                .await?
                .into_iter()
                .map(|m| m.id)
                .filter(|id| !erased_now.contains(id))
                .collect();
            let turns: Vec<TurnId> = self
                .store
                .turns_by_ids(&ns, &e.turns)
                .await?
                .into_iter()
                .filter(|t| t.text != ERASED_TEXT)
                .map(|t| t.id)
                .collect();
            let restored: HashMap<TurnId, String> =
                self.store.turns_by_ids(&ns, &e.redacted).await?.into_iter().map(|t| (t.id, t.text)).collect();
            let redact: Vec<(TurnId, String)> =
                texts.into_iter().filter(|(id, text)| restored.get(id).is_some_and(|now| now != text)).collect();
            let plan = ErasePlan {
                target: e.target.clone(),
                reason: format!("re-applied after a restore: {} (erasure {} of {})", e.reason, e.id, e.at.to_rfc3339()),
                by: e.by.clone(),
                memories,
                turns,
                redact,
            };
            if plan.is_empty() {
                continue;
            }
            let again = Reintroduced {
                namespace: e.namespace.clone(),
                erasure: e.id,
                at: e.at,
                reason: e.reason.clone(),
                memories: plan.memories.clone(),
                turns: plan.turns.iter().chain(plan.redact.iter().map(|(t, _)| t)).copied().collect(),
            };
            if keep_erased {
                out.reintroduced.push(again);
            } else {
                // One failure does not stop the others: the records are only in memory now.
                match self.store.erase(&ns, self.clock.now(), plan).await {
                    Ok(_) => out.reapplied.push(again),
                    Err(err) => out.failed.push(format!(
                        "erasure {} of {} in {} ({}): {err}",
                        e.id,
                        e.at.to_rfc3339(),
                        e.namespace,
                        e.reason
                    )),
                }
            }
        }
        Ok(out)
    }
}
