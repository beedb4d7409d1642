//! The in-memory store's history chain (see `crate::chain` and docs/history-chain.md): every
//! turn, memory event and erasure of a namespace is an entry of its chain, appended by the write
//! that makes it. The content of an entry's row is read from the row as it is now, so a check
//! sees what the store holds, as the SQLite store's does.
use crate::chain::{
    self, Appender, ChainHead, ChainRecord, ChainReport, Content, CreatedMemory, EntryKind, EventContent, TurnContent,
};
use crate::error::{CoreError, Result, StoreErrorKind};
use crate::model::{Memory, MemoryEvent, Turn};

use super::state::State;

/// A seq or id as the chain encodes it (an i64).
fn chain_int(n: u64) -> Result<i64> {
    i64::try_from(n)
        .map_err(|_| CoreError::store_message(StoreErrorKind::Full, format!("{n} is past the chain's range")))
}

/// The entities as the chain commits to them: the JSON text of the list, as the SQLite store
/// keeps it.
fn entities_json(entities: &[String]) -> Result<String> {
    serde_json::to_string(entities)
        .map_err(|e| CoreError::store_message(StoreErrorKind::Other, format!("cannot encode JSON: {e}")))
}

/// What a `created` event commits to of its memory, read from the memory as it is now (an
/// erased memory's emptied columns included).
fn created_of(m: &Memory) -> Result<CreatedMemory> {
    Ok(CreatedMemory {
        kind: m.kind.as_str().to_string(),
        content: m.content.clone(),
        claim_entity: m.claim.as_ref().map(|c| c.entity.clone()),
        claim_attribute: m.claim.as_ref().map(|c| c.attribute.clone()),
        claim_value: m.claim.as_ref().map(|c| c.value.clone()),
        entities: entities_json(&m.entities)?,
        importance: m.importance,
        created_at: m.created_at.0,
        pinned: m.pinned,
        valid_from: m.validity.from.map(|t| t.0),
        valid_to: m.validity.to.map(|t| t.0),
    })
}

/// A turn's chained content now (without its erasure mark).
pub(super) fn turn_content(t: &Turn) -> TurnContent {
    TurnContent {
        namespace: t.namespace.as_str().to_string(),
        id: t.id.0,
        source: t.source.clone(),
        at: t.at.0,
        text: t.text.clone(),
        external_id: t.external_id.clone(),
        erased: None,
    }
}

/// An event's chained content now (without its erasure mark).
pub(super) fn event_content(s: &State, e: &MemoryEvent) -> Result<EventContent> {
    let m = s.memories.get(&e.memory);
    let memory = match m {
        Some(m) if e.event == "created" => Some(created_of(m)?),
        _ => None,
    };
    Ok(EventContent {
        namespace: m.map(|m| m.namespace.as_str().to_string()),
        seq: chain_int(e.seq)?,
        memory_id: e.memory.0,
        at: e.at.0,
        event: e.event.clone(),
        turn_id: e.turn.map(|t| t.0),
        detail: e.detail.clone(),
        memory,
        erased: None,
    })
}

/// Append `content` to the chain of `namespace`.
pub(super) fn append(s: &mut State, namespace: &str, content: &Content) {
    let entries = s.chains.entry(namespace.to_string()).or_default();
    let mut a = Appender::after(namespace, entries.last().map(|e| (e.seq, e.entry_hash)));
    entries.push(a.append(content));
}

/// The row an entry points at, as it is now, with what its erasures list for it.
fn row(s: &State, entry: EntryKind, id: i64) -> Result<Option<Content>> {
    let mark = s.marks.get(&(entry, id)).cloned();
    Ok(match entry {
        EntryKind::Turn => {
            s.turns.get(&crate::ids::TurnId(id)).map(|t| Content::Turn(TurnContent { erased: mark, ..turn_content(t) }))
        }
        EntryKind::Event => match u64::try_from(id).ok().and_then(|seq| s.events.get(&seq)) {
            Some(e) => Some(Content::Event(EventContent { erased: mark, ..event_content(s, e)? })),
            None => None,
        },
        EntryKind::Erasure => s.erasures.get(&id).cloned().map(Content::Erasure),
    })
}

/// The entries of `namespace` with a seq above `after`, at most `limit`, with their rows.
pub(super) fn page(s: &State, namespace: &str, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
    let Some(entries) = s.chains.get(namespace) else { return Ok(vec![]) };
    entries
        .iter()
        .filter(|e| e.seq > after)
        .take(limit)
        .map(|e| Ok(e.record(namespace, row(s, e.entry, e.id)?)))
        .collect()
}

/// Every namespace's recorded head, by namespace.
pub(super) fn heads(s: &State) -> Vec<ChainHead> {
    s.chains.keys().filter_map(|ns| head(s, ns)).collect()
}

/// The head of namespace `ns`'s chain (None: nothing chained there).
fn head(s: &State, ns: &str) -> Option<ChainHead> {
    let (ns, entries) = s.chains.get_key_value(ns)?;
    entries.last().map(|e| ChainHead { namespace: ns.clone(), seq: e.seq, hash: e.entry_hash })
}

/// Check the chain of every namespace: each entry against its row and predecessor, the
/// recorded head, and every row of the namespace against the chain (none left out).
pub(super) fn verify_all(s: &State) -> Result<Vec<ChainReport>> {
    let mut names: std::collections::BTreeSet<String> = s.chains.keys().cloned().collect();
    names.extend(s.namespaces().iter().map(|n| n.as_str().to_string()));
    let mut out = Vec::new();
    for ns in names {
        let records = page(s, &ns, 0, usize::MAX)?;
        let chained: std::collections::BTreeSet<(EntryKind, i64)> = records.iter().map(|r| (r.entry, r.id)).collect();
        let mut rows: Vec<(EntryKind, i64)> =
            s.turns.values().filter(|t| t.namespace.as_str() == ns).map(|t| (EntryKind::Turn, t.id.0)).collect();
        for e in s.events.values() {
            if s.memories.get(&e.memory).is_some_and(|m| m.namespace.as_str() == ns) {
                rows.push((EntryKind::Event, chain_int(e.seq)?));
            }
        }
        rows.extend(s.erasures.values().filter(|r| r.namespace == ns).map(|r| (EntryKind::Erasure, r.id)));
        let unchained: Vec<(EntryKind, i64)> = rows.into_iter().filter(|r| !chained.contains(r)).collect();
        let head = head(s, &ns);
        out.push(chain::verify(&ns, records, head.as_ref(), &unchained));
    }
    Ok(out)
}
