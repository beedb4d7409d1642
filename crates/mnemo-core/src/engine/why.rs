//! `why(memory)`: a memory's history — created from which turn, reinforced by what,
//! tombstoned why, superseded by which memory, when.
use serde::{Deserialize, Serialize};

use super::Engine;
use mnemo_contract::error::{CoreError, Result};
use mnemo_contract::model::*;

/// A memory and everything that happened to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhyReport {
    /// The memory as it is now.
    pub memory: Memory,
    /// Its history, oldest first.
    pub events: Vec<MemoryEvent>,
    /// The turns it came from.
    pub turns: Vec<Turn>,
    /// The memory that superseded it, if any.
    pub superseded_by: Option<Memory>,
    /// The erasure that emptied it, if it was erased (its content is gone; this says when and
    /// why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<mnemo_contract::erase::ErasureRecord>,
}

impl Engine {
    /// The history of memory `id` in `ns`.
    pub async fn why(&self, ns: &Namespace, id: MemoryId) -> Result<WhyReport> {
        let memory = self
            .store
            .get_many(ns, &[id])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| CoreError::NotFound(format!("memory {id} in namespace {ns}")))?;
        let events = self.store.history(ns, id).await?;
        let superseded_by = match &memory.status {
            Status::Tombstoned { superseded_by: Some(s), .. } => {
                self.store.get_many(ns, &[*s]).await?.into_iter().next()
            }
            _ => None,
        };
        let mut turn_ids: Vec<TurnId> = memory.provenance.turns.clone();
        turn_ids.extend(events.iter().filter_map(|e| e.turn));
        turn_ids.sort();
        turn_ids.dedup();
        let turns = self.store.turns_by_ids(ns, &turn_ids).await?;
        let erased = match &memory.status {
            Status::Tombstoned { reason, .. } if reason.starts_with("erased: ") => {
                self.store.erasures(ns).await?.into_iter().rev().find(|e| e.memories.contains(&id))
            }
            _ => None,
        };
        Ok(WhyReport { memory, events, turns, superseded_by, erased })
    }
}
