//! Row <-> domain conversions. A row that does not decode is an error naming the table, the
//! row and the column, never a panic.
use mnemo_contract::{
    Claim, CoreError, Embedding, Memory, MemoryEvent, MemoryId, MemoryKind, Namespace, Provenance, Status, Timestamp,
    Turn, TurnId,
};
use serde::de::DeserializeOwned;
use tokio_postgres::types::FromSql;
use tokio_postgres::Row;

use crate::error::PgError;

/// The columns `memory` expects, in order.
pub(crate) const MEMORY_COLUMNS: &str = "id, namespace, kind, content, claim_entity, claim_attribute, claim_value, \
     entities, importance, reinforcements, sources, provenance, created_at, last_confirmed_at, last_accessed_at, \
     pinned, embedding_model, embedding, status, tombstone_reason, tombstoned_at, superseded_by, rev, valid_from, valid_to";

/// The columns `turn` expects, in order.
pub(crate) const TURN_COLUMNS: &str = "id, namespace, source, at, text, external_id";

/// The columns `event` expects, in order.
pub(crate) const EVENT_COLUMNS: &str = "seq, memory_id, at, event, turn_id, detail";

struct Cells<'r> {
    row: &'r Row,
    table: &'static str,
    id: i64,
}

impl<'r> Cells<'r> {
    fn new(row: &'r Row, table: &'static str) -> Result<Self, CoreError> {
        let id: i64 =
            row.try_get(0).map_err(|e| PgError::Corrupt { table, id: -1, detail: format!("key column: {e}") })?;
        Ok(Cells { row, table, id })
    }

    fn bad(&self, detail: String) -> CoreError {
        PgError::Corrupt { table: self.table, id: self.id, detail }.into()
    }

    fn get<'a, T: FromSql<'a>>(&'a self, idx: usize, column: &str) -> Result<T, CoreError> {
        self.row.try_get(idx).map_err(|e| self.bad(format!("column {column}: {e}")))
    }

    fn json<T: DeserializeOwned>(&self, idx: usize, column: &str) -> Result<T, CoreError> {
        let text: String = self.get(idx, column)?;
        serde_json::from_str(&text).map_err(|e| self.bad(format!("column {column}: invalid JSON: {e}")))
    }

    fn namespace(&self, idx: usize) -> Result<Namespace, CoreError> {
        let s: String = self.get(idx, "namespace")?;
        Namespace::new(&s).map_err(|e| self.bad(format!("column namespace: {e}")))
    }

    fn u64(&self, idx: usize, column: &str) -> Result<u64, CoreError> {
        let v: i64 = self.get(idx, column)?;
        u64::try_from(v).map_err(|_| self.bad(format!("column {column}: negative value {v}")))
    }
}

/// An embedding vector as little-endian f32 bytes (bit-exact).
pub(crate) fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode_vector(bytes: &[u8]) -> Option<Vec<f32>> {
    let chunks = bytes.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return None;
    }
    Some(chunks.map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// A memory from a row of `MEMORY_COLUMNS`.
pub(crate) fn memory(row: &Row) -> Result<Memory, CoreError> {
    let c = Cells::new(row, "memories")?;
    let kind_text: String = c.get(2, "kind")?;
    let kind = MemoryKind::ALL
        .into_iter()
        .find(|k| k.as_str() == kind_text)
        .ok_or_else(|| c.bad(format!("column kind: unknown kind {kind_text:?}")))?;
    let claim = match (
        c.get::<Option<String>>(4, "claim_entity")?,
        c.get::<Option<String>>(5, "claim_attribute")?,
        c.get::<Option<String>>(6, "claim_value")?,
    ) {
        (Some(entity), Some(attribute), Some(value)) => Some(Claim { entity, attribute, value }),
        (None, None, None) => None,
        _ => return Err(c.bad("columns claim_*: partly set".into())),
    };
    let reinforcements: i64 = c.get(9, "reinforcements")?;
    let reinforcements =
        u32::try_from(reinforcements).map_err(|_| c.bad(format!("column reinforcements: {reinforcements}")))?;
    let provenance: Provenance = c.json(11, "provenance")?;
    let embedding = match (c.get::<Option<String>>(16, "embedding_model")?, c.get::<Option<Vec<u8>>>(17, "embedding")?)
    {
        (Some(model), Some(bytes)) => Some(Embedding {
            model,
            vector: decode_vector(&bytes)
                .ok_or_else(|| c.bad(format!("column embedding: {} bytes is not whole f32s", bytes.len())))?,
        }),
        (None, None) => None,
        _ => return Err(c.bad("columns embedding_model/embedding: one set without the other".into())),
    };
    let status_text: String = c.get(18, "status")?;
    let status = match status_text.as_str() {
        "active" => Status::Active,
        "tombstoned" => Status::Tombstoned {
            reason: c.get::<Option<String>>(19, "tombstone_reason")?.unwrap_or_default(),
            at: Timestamp(
                c.get::<Option<i64>>(20, "tombstoned_at")?
                    .ok_or_else(|| c.bad("column tombstoned_at: missing on a tombstone".into()))?,
            ),
            superseded_by: c.get::<Option<i64>>(21, "superseded_by")?.map(MemoryId),
        },
        other => return Err(c.bad(format!("column status: {other:?}"))),
    };
    let validity = mnemo_contract::Validity {
        from: c.get::<Option<i64>>(23, "valid_from")?.map(Timestamp),
        to: c.get::<Option<i64>>(24, "valid_to")?.map(Timestamp),
    };
    Ok(Memory {
        validity,
        id: MemoryId(c.id),
        namespace: c.namespace(1)?,
        kind,
        content: c.get(3, "content")?,
        claim,
        entities: c.json(7, "entities")?,
        importance: c.get(8, "importance")?,
        reinforcements,
        sources: c.json(10, "sources")?,
        provenance,
        created_at: Timestamp(c.get(12, "created_at")?),
        last_confirmed_at: Timestamp(c.get(13, "last_confirmed_at")?),
        last_accessed_at: c.get::<Option<i64>>(14, "last_accessed_at")?.map(Timestamp),
        pinned: c.get(15, "pinned")?,
        embedding,
        status,
        rev: c.u64(22, "rev")?,
    })
}

/// A turn from a row of `TURN_COLUMNS`.
pub(crate) fn turn(row: &Row) -> Result<Turn, CoreError> {
    let c = Cells::new(row, "turns")?;
    Ok(Turn {
        id: TurnId(c.id),
        namespace: c.namespace(1)?,
        source: c.get(2, "source")?,
        at: Timestamp(c.get(3, "at")?),
        text: c.get(4, "text")?,
        external_id: c.get(5, "external_id")?,
    })
}

/// An event from a row of `EVENT_COLUMNS`.
pub(crate) fn event(row: &Row) -> Result<MemoryEvent, CoreError> {
    let c = Cells::new(row, "memory_events")?;
    Ok(MemoryEvent {
        seq: c.u64(0, "seq")?,
        memory: MemoryId(c.get(1, "memory_id")?),
        at: Timestamp(c.get(2, "at")?),
        event: c.get(3, "event")?,
        turn: c.get::<Option<i64>>(4, "turn_id")?.map(TurnId),
        detail: c.get(5, "detail")?,
    })
}
