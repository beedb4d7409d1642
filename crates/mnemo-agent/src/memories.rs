//! Runtime operations over a namespace's memories as a whole: `list` (paged), `export` (JSONL,
//! one memory per line) and `restore` (a tombstoned memory back as a new active one). Vectors
//! are never part of the output: a memory says which model embedded it, not the numbers.
use serde::{Deserialize, Serialize};

use mnemo_contract::*;
use mnemo_core::engine::RestoreReport;

use crate::error::AgentError;
use crate::runtime::Runtime;

/// Most memories one `list` page returns.
pub const MAX_PAGE: usize = 1000;

/// A memory as listed or exported: every field but the embedding vector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    /// Id.
    pub id: MemoryId,
    /// Namespace.
    pub namespace: Namespace,
    /// Kind.
    pub kind: MemoryKind,
    /// Content text.
    pub content: String,
    /// The structured claim, if any.
    pub claim: Option<Claim>,
    /// Normalised entities.
    pub entities: Vec<String>,
    /// Importance in 0..=1.
    pub importance: f32,
    /// Restatements.
    pub reinforcements: u32,
    /// Distinct corroborating sources.
    pub sources: Vec<String>,
    /// Where it came from.
    pub provenance: Provenance,
    /// When inserted.
    pub created_at: Timestamp,
    /// Last creation, reinforcement or confirmation.
    pub last_confirmed_at: Timestamp,
    /// Last recalled.
    pub last_accessed_at: Option<Timestamp>,
    /// Pinned.
    pub pinned: bool,
    /// The model that embedded it (the vector itself is left out).
    pub embedding_model: Option<String>,
    /// Active or tombstoned (with reason, time, successor).
    #[serde(flatten)]
    pub status: Status,
}

impl From<Memory> for MemoryRecord {
    fn from(m: Memory) -> Self {
        MemoryRecord {
            id: m.id,
            namespace: m.namespace,
            kind: m.kind,
            content: m.content,
            claim: m.claim,
            entities: m.entities,
            importance: m.importance,
            reinforcements: m.reinforcements,
            sources: m.sources,
            provenance: m.provenance,
            created_at: m.created_at,
            last_confirmed_at: m.last_confirmed_at,
            last_accessed_at: m.last_accessed_at,
            pinned: m.pinned,
            embedding_model: m.embedding.map(|e| e.model),
            status: m.status,
        }
    }
}

/// One page of `list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryPage {
    /// The memories, by id.
    pub memories: Vec<MemoryRecord>,
    /// Pass as `after` for the next page; None when this page is the last.
    pub next_after: Option<MemoryId>,
}

impl Runtime {
    /// One page of `ns`'s memories by id (`page.limit` in 1..=`MAX_PAGE`).
    pub async fn list(&self, ns: &Namespace, page: &ListPage) -> Result<MemoryPage, AgentError> {
        if page.limit == 0 || page.limit > MAX_PAGE {
            return Err(CoreError::InvalidInput(format!(
                "a page holds 1 to {MAX_PAGE} memories, {} were asked for",
                page.limit
            ))
            .into());
        }
        let memories = self.engine().list_memories(ns, page).await?;
        let next_after = if memories.len() == page.limit { memories.last().map(|m| m.id) } else { None };
        Ok(MemoryPage { memories: memories.into_iter().map(MemoryRecord::from).collect(), next_after })
    }

    /// One page of `ns`'s memories after the memory `after` names (a short id, as the previous
    /// page's `next_after` reads).
    pub async fn list_after(
        &self,
        ns: &Namespace,
        after: Option<IdRef>,
        limit: usize,
        include_tombstoned: bool,
    ) -> Result<MemoryPage, AgentError> {
        let after = match after {
            Some(r) => Some(self.engine().memory_id(ns, r).await?),
            None => None,
        };
        self.list(ns, &ListPage { after, limit, include_tombstoned }).await
    }

    /// The history of the memory `id` names in `ns`.
    pub async fn why(&self, ns: &Namespace, id: impl Into<IdRef>) -> Result<mnemo_core::engine::WhyReport, AgentError> {
        let id = self.engine().memory_id(ns, id.into()).await?;
        let mut w = self.engine().why(ns, id).await?;
        for e in &mut w.events {
            e.detail = short_ids_in_detail(&e.detail);
        }
        Ok(w)
    }

    /// Every memory of `ns` (tombstoned ones too when asked), by id, one JSON document per line
    /// handed to `line`, a page at a time; returns how many were exported.
    pub async fn export(
        &self,
        ns: &Namespace,
        include_tombstoned: bool,
        line: &mut (dyn FnMut(&str) -> std::io::Result<()> + Send),
    ) -> Result<usize, AgentError> {
        let mut after = None;
        let mut n = 0;
        loop {
            let page = self.list(ns, &ListPage { after, limit: MAX_PAGE, include_tombstoned }).await?;
            for m in &page.memories {
                let text = tenant_spelling(|| serde_json::to_string(m)).map_err(|e| {
                    CoreError::store_message(
                        StoreErrorKind::Other,
                        format!("memory {} cannot be serialised: {e}", m.id),
                    )
                })?;
                line(&text).map_err(|e| AgentError::Io {
                    action: "write the export of",
                    file: ns.to_string(),
                    error: e,
                })?;
                n += 1;
            }
            match page.next_after {
                Some(a) => after = Some(a),
                None => return Ok(n),
            }
        }
    }

    /// Restore tombstoned memory `id` as a new active memory (provenance "restored from memory
    /// N"); the tombstone stays. Restoring an active memory is an error.
    pub async fn restore(&self, ns: &Namespace, id: impl Into<IdRef>) -> Result<RestoreReport, AgentError> {
        let id = self.engine().memory_id(ns, id.into()).await?;
        Ok(self.engine().restore(ns, id).await?)
    }
}

/// An event's detail as a tenant reads it: the successor a tombstone names (stored as its
/// number, `{"reason": …, "superseded_by": 4294967338}`) by its short id (`"m42"`). Any other
/// detail is kept as stored.
fn short_ids_in_detail(detail: &str) -> String {
    let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str::<serde_json::Value>(detail) else {
        return detail.to_string();
    };
    match map.get("superseded_by").and_then(serde_json::Value::as_i64) {
        Some(n) => {
            map.insert("superseded_by".into(), MemoryId(n).short().into());
            serde_json::Value::Object(map).to_string()
        }
        None => detail.to_string(),
    }
}

#[cfg(test)]
mod short_id_tests {
    use super::*;

    #[test]
    fn a_successor_in_an_event_is_named_by_its_short_id() {
        let stored = format!("{{\"reason\":\"changed\",\"superseded_by\":{}}}", (5i64 << 32) | 9);
        assert_eq!(short_ids_in_detail(&stored), "{\"reason\":\"changed\",\"superseded_by\":\"m9\"}");
        assert_eq!(short_ids_in_detail("{\"source\":\"erp\"}"), "{\"source\":\"erp\"}");
        assert_eq!(short_ids_in_detail("plain words"), "plain words");
    }
}
