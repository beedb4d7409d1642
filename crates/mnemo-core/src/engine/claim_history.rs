//! A claim's history: every value memory has held for `entity | attribute`, the superseded and
//! forgotten ones included (a tombstone keeps its value, its time and why it ended), in the
//! order they were recorded.
use super::Engine;
use mnemo_contract::error::Result;
use mnemo_contract::model::{Memory, Namespace};

impl Engine {
    /// The memories of `ns` whose claim is on `entity | attribute` (as `Claim::is_on` matches
    /// names), every status, oldest recording first (then by id).
    pub async fn claim_history(&self, ns: &Namespace, entity: &str, attribute: &str) -> Result<Vec<Memory>> {
        let mut values = self.store.claim_memories(ns, entity, attribute).await?;
        values.sort_by_key(|m| (m.created_at, m.id));
        Ok(values)
    }
}
