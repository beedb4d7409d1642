//! Row <-> domain conversions. Decoding is defensive: a row that was edited or damaged gives a
//! store failure of kind `Damaged` naming the table, the row and the column, never a panic.
use mnemo_contract::{
    Claim, CoreError, Embedding, Memory, MemoryEvent, MemoryId, MemoryKind, Namespace, Provenance, Status, Timestamp,
    Turn, TurnId, Validity,
};
use rusqlite::types::FromSql;
use rusqlite::Row;
use serde::de::DeserializeOwned;

use crate::error::{DbResult, StoreError};
use crate::sqlite::embedding;

/// The columns `memory_from_row` expects, in order.
pub(crate) const MEMORY_COLUMNS: &str = "id, namespace, kind, content, claim_entity, claim_attribute, claim_value, \
     entities, importance, reinforcements, sources, provenance, created_at, last_confirmed_at, last_accessed_at, \
     pinned, embedding_model, embedding, status, tombstone_reason, tombstoned_at, superseded_by, rev, embedding_codec, valid_from, valid_to";

/// The columns `turn_from_row` expects, in order.
pub(crate) const TURN_COLUMNS: &str = "id, namespace, source, at, text, external_id";

/// The columns `event_from_row` expects, in order.
pub(crate) const EVENT_COLUMNS: &str = "seq, memory_id, at, event, turn_id, detail";

/// Reads the columns of one row, naming the row in every error.
struct Cells<'r, 's> {
    row: &'r Row<'s>,
    table: &'static str,
    id: i64,
}

impl<'r, 's> Cells<'r, 's> {
    /// The row's key is column 0 (an INTEGER PRIMARY KEY, so always an integer).
    fn new(row: &'r Row<'s>, table: &'static str) -> Result<Self, CoreError> {
        let id: i64 = row.get(0).db()?;
        Ok(Cells { row, table, id })
    }

    fn bad(&self, detail: String) -> CoreError {
        StoreError::Corrupt { table: self.table, id: self.id, detail }.into()
    }

    fn get<T: FromSql>(&self, idx: usize, column: &str) -> Result<T, CoreError> {
        self.row.get(idx).map_err(|e| self.bad(format!("column {column}: {e}")))
    }

    fn json<T: DeserializeOwned>(&self, idx: usize, column: &str) -> Result<T, CoreError> {
        let text: String = self.get(idx, column)?;
        serde_json::from_str(&text).map_err(|e| self.bad(format!("column {column}: invalid JSON: {e}")))
    }

    fn namespace(&self, idx: usize) -> Result<Namespace, CoreError> {
        let s: String = self.get(idx, "namespace")?;
        Namespace::new(&s).map_err(|e| self.bad(format!("column namespace: {e}")))
    }

    fn time(&self, idx: usize, column: &str) -> Result<Timestamp, CoreError> {
        Ok(Timestamp(self.get(idx, column)?))
    }

    fn opt_time(&self, idx: usize, column: &str) -> Result<Option<Timestamp>, CoreError> {
        Ok(self.get::<Option<i64>>(idx, column)?.map(Timestamp))
    }

    fn u64(&self, idx: usize, column: &str) -> Result<u64, CoreError> {
        let v: i64 = self.get(idx, column)?;
        u64::try_from(v).map_err(|_| self.bad(format!("column {column}: negative value {v}")))
    }
}

pub(crate) fn parse_kind(s: &str) -> Option<MemoryKind> {
    MemoryKind::ALL.into_iter().find(|k| k.as_str() == s)
}

/// A memory from a row selected with `MEMORY_COLUMNS`.
pub(crate) fn memory_from_row(row: &Row<'_>) -> Result<Memory, CoreError> {
    let c = Cells::new(row, "memories")?;
    let kind_text: String = c.get(2, "kind")?;
    let kind = parse_kind(&kind_text).ok_or_else(|| c.bad(format!("column kind: unknown kind {kind_text:?}")))?;
    let claim = match (
        c.get::<Option<String>>(4, "claim_entity")?,
        c.get::<Option<String>>(5, "claim_attribute")?,
        c.get::<Option<String>>(6, "claim_value")?,
    ) {
        (Some(entity), Some(attribute), Some(value)) => Some(Claim { entity, attribute, value }),
        (None, None, None) => None,
        _ => return Err(c.bad("claim columns are partly NULL".to_string())),
    };
    let importance: f64 = c.get(8, "importance")?;
    let reinforcements: i64 = c.get(9, "reinforcements")?;
    let reinforcements = u32::try_from(reinforcements)
        .map_err(|_| c.bad(format!("column reinforcements: {reinforcements} out of range")))?;
    let pinned: i64 = c.get(15, "pinned")?;
    let embedding = match (c.get::<Option<String>>(16, "embedding_model")?, c.get::<Option<Vec<u8>>>(17, "embedding")?)
    {
        (Some(model), Some(bytes)) => {
            let codec = c.get::<Option<i64>>(23, "embedding_codec")?;
            let vector = embedding::decode(codec, &bytes).map_err(|e| c.bad(format!("column embedding: {e}")))?;
            Some(Embedding { model, vector })
        }
        (None, None) => None,
        _ => return Err(c.bad("embedding and embedding_model must both be set or both be NULL".to_string())),
    };
    let status_text: String = c.get(18, "status")?;
    let status = match status_text.as_str() {
        "active" => Status::Active,
        "tombstoned" => Status::Tombstoned {
            reason: c
                .get::<Option<String>>(19, "tombstone_reason")?
                .ok_or_else(|| c.bad("tombstoned without a reason".to_string()))?,
            at: c.opt_time(20, "tombstoned_at")?.ok_or_else(|| c.bad("tombstoned without a time".to_string()))?,
            superseded_by: c.get::<Option<i64>>(21, "superseded_by")?.map(MemoryId),
        },
        other => return Err(c.bad(format!("column status: unknown status {other:?}"))),
    };
    let validity = Validity { from: c.opt_time(24, "valid_from")?, to: c.opt_time(25, "valid_to")? };
    Ok(Memory {
        validity,
        id: MemoryId(c.id),
        namespace: c.namespace(1)?,
        kind,
        content: c.get(3, "content")?,
        claim,
        entities: c.json::<Vec<String>>(7, "entities")?,
        importance: importance as f32,
        reinforcements,
        sources: c.json::<Vec<String>>(10, "sources")?,
        provenance: c.json::<Provenance>(11, "provenance")?,
        created_at: c.time(12, "created_at")?,
        last_confirmed_at: c.time(13, "last_confirmed_at")?,
        last_accessed_at: c.opt_time(14, "last_accessed_at")?,
        pinned: pinned != 0,
        embedding,
        status,
        rev: c.u64(22, "rev")?,
    })
}

/// A turn from a row selected with `TURN_COLUMNS`.
pub(crate) fn turn_from_row(row: &Row<'_>) -> Result<Turn, CoreError> {
    let c = Cells::new(row, "turns")?;
    Ok(Turn {
        id: TurnId(c.id),
        namespace: c.namespace(1)?,
        source: c.get(2, "source")?,
        at: c.time(3, "at")?,
        text: c.get(4, "text")?,
        external_id: c.get(5, "external_id")?,
    })
}

/// An event from a row selected with `EVENT_COLUMNS`.
pub(crate) fn event_from_row(row: &Row<'_>) -> Result<MemoryEvent, CoreError> {
    let c = Cells::new(row, "memory_events")?;
    Ok(MemoryEvent {
        seq: c.u64(0, "seq")?,
        memory: MemoryId(c.get(1, "memory_id")?),
        at: c.time(2, "at")?,
        event: c.get(3, "event")?,
        turn: c.get::<Option<i64>>(4, "turn_id")?.map(TurnId),
        detail: c.get(5, "detail")?,
    })
}
