//! Bulk import of another store's contents with their ids, revisions and history intact (the
//! `mnemo migrate` path): one transaction per namespace under its writer lock; the sequences
//! are moved past the imported values afterwards. Only into an empty store: ids must not
//! collide.
use deadpool_postgres::Transaction;
use mnemo_contract::{CoreError, Memory, MemoryEvent, Namespace, Status, StoreErrorKind, Turn};

use crate::error::DbContext;
use crate::store::read;
use crate::store::rows::encode_vector;

type Result<T> = std::result::Result<T, CoreError>;

fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v)
        .map_err(|e| CoreError::store_message(StoreErrorKind::Other, format!("cannot encode JSON: {e}")))
}

fn i64_of(v: u64, what: &str) -> Result<i64> {
    i64::try_from(v).map_err(|_| CoreError::InvalidInput(format!("{what} {v} does not fit PostgreSQL's BIGINT")))
}

/// Insert one namespace's turns, memories and events as they are.
pub(crate) async fn namespace(
    tx: &Transaction<'_>,
    ns: &Namespace,
    turns: &[Turn],
    memories: &[Memory],
    events: &[MemoryEvent],
) -> Result<()> {
    for t in turns {
        if &t.namespace != ns {
            return Err(CoreError::InvalidInput(format!("turn {} is of namespace {}, not {ns}", t.id, t.namespace)));
        }
        read::rows(
            tx,
            "INSERT INTO turns (id, namespace, source, at, text, external_id) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[&t.id.0, &ns.as_str(), &t.source, &t.at.0, &t.text, &t.external_id],
        )
        .await?;
    }
    let rule = crate::store::decay::rule_in_force(tx, ns).await?;
    for m in memories {
        if &m.namespace != ns {
            return Err(CoreError::InvalidInput(format!("memory {} is of namespace {}, not {ns}", m.id, m.namespace)));
        }
        let key = m.claim.as_ref().map(|c| c.key());
        let norm: Vec<String> =
            m.entities.iter().map(|e| mnemo_contract::text::norm_name(e)).filter(|e| !e.is_empty()).collect();
        let (status, reason, tomb_at) = match &m.status {
            Status::Active => ("active", None, None),
            Status::Tombstoned { reason, at, .. } => ("tombstoned", Some(reason.clone()), Some(at.0)),
        };
        read::rows(
            tx,
            "INSERT INTO memories (id, namespace, kind, content, claim_entity, claim_attribute, claim_value, \
             claim_entity_norm, claim_attribute_norm, entities, entities_norm, importance, reinforcements, sources, \
             provenance, created_at, last_confirmed_at, last_accessed_at, pinned, embedding_model, embedding, status, \
             tombstone_reason, tombstoned_at, rev, decay_due, valid_from, valid_to) VALUES ($1, $2, $3, $4, $5, $6, \
             $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, \
             $28) RETURNING id",
            &[
                &m.id.0,
                &ns.as_str(),
                &m.kind.as_str(),
                &m.content,
                &m.claim.as_ref().map(|c| c.entity.clone()),
                &m.claim.as_ref().map(|c| c.attribute.clone()),
                &m.claim.as_ref().map(|c| c.value.clone()),
                &key.as_ref().map(|k| k.0.clone()),
                &key.as_ref().map(|k| k.1.clone()),
                &to_json(&m.entities)?,
                &norm,
                &m.importance,
                &i64::from(m.reinforcements),
                &to_json(&m.sources)?,
                &to_json(&m.provenance)?,
                &m.created_at.0,
                &m.last_confirmed_at.0,
                &m.last_accessed_at.map(|t| t.0),
                &m.pinned,
                &m.embedding.as_ref().map(|e| e.model.clone()),
                &m.embedding.as_ref().map(|e| encode_vector(&e.vector)),
                &status,
                &reason,
                &tomb_at,
                &i64_of(m.rev, "rev")?,
                &m.status.is_active().then(|| rule.due_of(m).map(|t| t.0)).flatten(),
                &m.validity.from.map(|t| t.0),
                &m.validity.to.map(|t| t.0),
            ],
        )
        .await?;
    }
    // Successors after every row of the namespace exists.
    for m in memories {
        if let Status::Tombstoned { superseded_by: Some(by), .. } = &m.status {
            read::rows(
                tx,
                "UPDATE memories SET superseded_by = $1 WHERE id = $2 AND namespace = $3 RETURNING id",
                &[&by.0, &m.id.0, &ns.as_str()],
            )
            .await?;
        }
    }
    for e in events {
        read::rows(
            tx,
            "INSERT INTO memory_events (seq, memory_id, namespace, at, event, turn_id, detail) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING seq",
            &[
                &i64_of(e.seq, "event seq")?,
                &e.memory.0,
                &ns.as_str(),
                &e.at.0,
                &e.event,
                &e.turn.map(|t| t.0),
                &e.detail,
            ],
        )
        .await?;
    }
    let max_memory = memories.iter().map(|m| m.id.0).max();
    let max_turn = turns.iter().map(|t| t.id.0).max();
    crate::store::ids::adopt(tx, ns, max_memory, max_turn).await?;
    Ok(())
}

/// Move every sequence past the imported values (scope `*`).
pub(crate) async fn bump_sequences(tx: &Transaction<'_>) -> Result<()> {
    tx.batch_execute(
        "SELECT setval(pg_get_serial_sequence('turns', 'id'), GREATEST((SELECT COALESCE(MAX(id), 0) FROM turns), 1), \
                (SELECT COUNT(*) > 0 FROM turns)); \
         SELECT setval(pg_get_serial_sequence('memories', 'id'), GREATEST((SELECT COALESCE(MAX(id), 0) FROM memories), 1), \
                (SELECT COUNT(*) > 0 FROM memories)); \
         SELECT setval(pg_get_serial_sequence('memory_events', 'seq'), \
                GREATEST((SELECT COALESCE(MAX(seq), 0) FROM memory_events), 1), (SELECT COUNT(*) > 0 FROM memory_events)); \
         SELECT setval('mnemo_rev', GREATEST((SELECT COALESCE(MAX(rev), 0) FROM memories), 1), \
                (SELECT COUNT(*) > 0 FROM memories));",
    )
    .await
    .db("move the sequences past the imported rows")
}
