//! Entity matches (`[index] entity_boost`): a query that names one of a memory's entities
//! ("What did Caroline research?" and a memory whose entities hold "Caroline") ranks that
//! memory higher. On LoCoMo nearly every question names a speaker and nearly all of its
//! evidence turns are that speaker's (bench/RESULTS.md), which BM25 barely rewards: the name is
//! in half the turns of the conversation, so its IDF is low.
//!
//! An entity is matched as a whole phrase of words: its lower-cased alphanumeric words must
//! appear consecutively in the query's ("LGBTQ support group" matches "…the LGBTQ support
//! group?", not "…a support group"). A matched hit's score s becomes (s + w) / (1 + w), an
//! unmatched one's s / (1 + w): scores stay in 0..=1, and with w ≥ 1 every matched hit
//! outranks every unmatched one.
use std::collections::HashSet;

use mnemo_contract::{CoreError, Hit, MemoryId, Result};

use mnemo_contract::fusion::sort_hits;

/// Entity phrases of up to this many words are matched (longer ones never match).
pub const MAX_ENTITY_WORDS: usize = 4;

/// The key form of an entity: its lower-cased alphanumeric words joined by one space (None
/// when it has no word, or more than `MAX_ENTITY_WORDS`).
pub fn entity_key(entity: &str) -> Option<String> {
    let words: Vec<String> = mnemo_contract::text::words(entity).collect();
    if words.is_empty() || words.len() > MAX_ENTITY_WORDS {
        return None;
    }
    Some(words.join(" "))
}

/// Every phrase of 1..=`MAX_ENTITY_WORDS` consecutive words of `query`, in key form: the
/// entity keys the query names.
pub fn query_phrases(query: &str) -> Vec<String> {
    let words: Vec<String> = mnemo_contract::text::words(query).collect();
    let mut out: Vec<String> = Vec::new();
    for n in 1..=MAX_ENTITY_WORDS {
        for w in words.windows(n) {
            out.push(w.join(" "));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Check the `entity_boost` setting (finite, ≥ 0); the error names the key.
pub fn validate_boost(w: f32) -> Result<()> {
    if !(w.is_finite() && w >= 0.0) {
        return Err(CoreError::Config(format!("index.entity_boost must be finite and >= 0, got {w}")));
    }
    Ok(())
}

/// Boost the hits in `matched` by `w` (see the module docs), re-sort, keep `limit`.
pub fn boost(mut hits: Vec<Hit>, matched: &HashSet<MemoryId>, w: f32, limit: usize) -> Vec<Hit> {
    if w > 0.0 && !matched.is_empty() {
        for h in &mut hits {
            let bonus = if matched.contains(&h.id) { w } else { 0.0 };
            h.score = ((h.score + bonus) / (1.0 + w)).clamp(0.0, 1.0);
        }
        sort_hits(&mut hits);
    }
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entities_match_as_whole_phrases() {
        assert_eq!(entity_key("  Caroline "), Some("caroline".into()));
        assert_eq!(entity_key("LGBTQ Support-Group"), Some("lgbtq support group".into()));
        assert_eq!(entity_key("?!"), None);
        assert_eq!(entity_key("a b c d e"), None);
        let q = query_phrases("What did Caroline's LGBTQ support group do?");
        assert!(q.contains(&"caroline".to_string()));
        assert!(q.contains(&"lgbtq support group".to_string()));
        assert!(!q.contains(&"support lgbtq".to_string()));
        assert!(!query_phrases("a support group").contains(&"lgbtq support group".to_string()));
        assert!(query_phrases("").is_empty());
    }

    #[test]
    fn matched_hits_rise_and_scores_stay_in_range() {
        let hits = vec![
            Hit { id: MemoryId(1), score: 0.9 },
            Hit { id: MemoryId(2), score: 0.5 },
            Hit { id: MemoryId(3), score: 0.1 },
        ];
        let matched = HashSet::from([MemoryId(3)]);
        // A small boost reorders near neighbours only.
        let b = boost(hits.clone(), &matched, 0.5, 10);
        let ids: Vec<i64> = b.iter().map(|h| h.id.0).collect();
        assert_eq!(ids, vec![1, 3, 2]);
        assert!(b.iter().all(|h| (0.0..=1.0).contains(&h.score)));
        // w >= 1: every matched hit outranks every unmatched one; the limit applies after.
        let b = boost(hits.clone(), &matched, 1.0, 2);
        assert_eq!(b.iter().map(|h| h.id.0).collect::<Vec<_>>(), vec![3, 1]);
        // Off, or nothing matched: the order and scores are untouched.
        assert_eq!(boost(hits.clone(), &matched, 0.0, 10), hits);
        assert_eq!(boost(hits.clone(), &HashSet::new(), 1.0, 10), hits);
        assert!(validate_boost(-0.1).is_err() && validate_boost(f32::NAN).is_err() && validate_boost(0.3).is_ok());
    }
}
