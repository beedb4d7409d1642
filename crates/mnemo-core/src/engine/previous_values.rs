//! A query about change ("what was the lead time before?", "where did I use to live?") is
//! answered with the claim's earlier values too: for the first few packed memories that carry
//! a claim, the values memory held before them (superseded or forgotten, most recent first) are
//! said in the pack's notes and added to the trace as tombstoned entries, never packed (the
//! assessor grades and acts only on what memory holds).
use super::Engine;
use mnemo_contract::model::{Memory, MemoryId, Namespace, Status};
use mnemo_contract::pack::{Pack, TraceEntry, TraceReason};
use mnemo_contract::time::Timestamp;

/// Packed claims whose earlier values are looked up (one store read each).
const CLAIMS_LOOKED_UP: usize = 3;

/// Earlier values said per claim, most recent first.
const VALUES_PER_CLAIM: usize = 3;

/// Words and phrases that ask how a value changed.
const CHANGE_CUES: [&str; 16] = [
    "before",
    "used to",
    "previous",
    "previously",
    "earlier",
    "formerly",
    "originally",
    "original",
    "prior",
    "changed",
    "change",
    "old",
    "no longer",
    "anymore",
    "any more",
    "initially",
];

/// Whether `query` asks about change: one of [`CHANGE_CUES`] as whole words.
pub fn asks_about_change(query: &str) -> bool {
    let words: Vec<String> =
        query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    CHANGE_CUES.iter().any(|cue| {
        let cue: Vec<&str> = cue.split(' ').collect();
        words.windows(cue.len()).any(|w| w.iter().zip(&cue).all(|(a, b)| a == b))
    })
}

impl Engine {
    /// When `query` asks about change, say the earlier values of the pack's first claims (see
    /// the module); `as_of`: only what had ended by then.
    pub(super) async fn attach_previous_values(
        &self,
        ns: &Namespace,
        query: &str,
        as_of: Option<Timestamp>,
        pack: &mut Pack,
    ) -> mnemo_contract::error::Result<()> {
        if !asks_about_change(query) {
            return Ok(());
        }
        let current: Vec<(MemoryId, String, String, Timestamp)> = pack
            .items
            .iter()
            .filter_map(|i| {
                let c = i.memory.claim.as_ref()?;
                Some((i.memory.id, c.entity.clone(), c.attribute.clone(), i.memory.created_at))
            })
            .take(CLAIMS_LOOKED_UP)
            .collect();
        for (id, entity, attribute, since) in current {
            let mut earlier: Vec<Memory> = self
                .store
                .claim_memories(ns, &entity, &attribute)
                .await?
                .into_iter()
                .filter(|m| m.id != id && m.created_at <= since && ended_by(m, as_of))
                .collect();
            earlier.sort_by_key(|m| std::cmp::Reverse((m.created_at, m.id)));
            for m in earlier.into_iter().take(VALUES_PER_CLAIM) {
                let Status::Tombstoned { reason, at, .. } = &m.status else { continue };
                let value = m.claim.as_ref().map_or(m.content.as_str(), |c| c.value.as_str());
                let said = format!(
                    "earlier value of {entity} | {attribute} (before {id}): {value:?} as {}, held from {} until {at} ({reason})",
                    m.id, m.created_at
                );
                pack.trace.push(TraceEntry {
                    id: m.id,
                    kind: m.kind,
                    pinned: m.pinned,
                    relevance: 0.0,
                    evidence: None,
                    salience: 0.0,
                    score: 0.0,
                    tokens: 0,
                    included: false,
                    reason: TraceReason::Tombstoned,
                    detail: format!("earlier value of {id}, named because the query asks about change; not packed"),
                });
                pack.notes.push(said);
            }
        }
        Ok(())
    }
}

/// Whether `m` had ended (was tombstoned) by `as_of` (any time when None).
fn ended_by(m: &Memory, as_of: Option<Timestamp>) -> bool {
    match (&m.status, as_of) {
        (Status::Active, _) => false,
        (Status::Tombstoned { .. }, None) => true,
        (Status::Tombstoned { at, .. }, Some(t)) => *at <= t,
    }
}

#[cfg(test)]
mod tests {
    use super::asks_about_change;

    #[test]
    fn change_is_asked_by_whole_words_and_phrases() {
        for q in [
            "what was the lead time before?",
            "Where did I use to live? Where did I used to live",
            "what was my previous commute",
            "has the owner changed",
            "what's the old address",
            "is Ben no longer the buyer",
        ] {
            assert!(asks_about_change(q), "{q}");
        }
        for q in ["what is the lead time", "who owns Northwind", "beforehand notes", "gold price", "exchange rate"] {
            assert!(!asks_about_change(q), "{q}");
        }
    }
}
