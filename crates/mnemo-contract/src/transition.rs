//! What a [`WriteOp`] makes of a memory, the same in every [`Store`](crate::Store): the checks
//! a batch passes before any row is touched, and the new state of a memory row that is
//! reinforced, confirmed or tombstoned. A store reads the row, applies the transition here and
//! persists what changed; the decay-due instant it stores beside the row, the revision and the
//! history event it appends are its own.
use crate::decay_due::DecayInputs;
use crate::error::{CoreError, Result};
use crate::model::{Memory, MemoryId, MemoryRef, Namespace, NewMemory, Status, TurnId, WriteOp};
use crate::time::Timestamp;

/// Check that every `MemoryRef::New` and `TombstoneNew` of the batch points at one of its
/// inserts, before a store touches anything (the whole batch is refused).
pub fn check_batch_refs(ops: &[WriteOp]) -> Result<()> {
    let inserts = ops.iter().filter(|op| matches!(op, WriteOp::Insert { .. })).count();
    for (i, op) in ops.iter().enumerate() {
        let (by, target) = match op {
            WriteOp::Tombstone { superseded_by, .. } => (superseded_by, None),
            WriteOp::TombstoneNew { index, superseded_by, .. } => (superseded_by, Some(*index)),
            _ => (&None, None),
        };
        let by = by.as_ref().and_then(|r| match r {
            MemoryRef::New(n) => Some(*n),
            MemoryRef::Existing(_) => None,
        });
        for (what, n) in [("superseded_by", by), ("target", target)] {
            if let Some(n) = n {
                if n >= inserts {
                    return Err(CoreError::InvalidInput(format!(
                        "op {i}: {what} refers to insert #{n} of the batch, but the batch has {inserts} insert(s)"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Why a memory to insert is refused, if it is: it must belong to the batch's namespace and
/// have a finite importance. The reason does not name the op: each store says which insert.
pub fn check_insert(ns: &Namespace, m: &NewMemory) -> std::result::Result<(), String> {
    if &m.namespace != ns {
        return Err(format!("the memory's namespace {} is not the batch's namespace {ns}", m.namespace));
    }
    if !m.importance.is_finite() {
        return Err(format!("importance {} is not a finite number", m.importance));
    }
    Ok(())
}

/// The decay inputs of a memory as it is inserted: never reinforced, confirmed when created.
pub fn inserted_decay_inputs(m: &NewMemory) -> DecayInputs {
    DecayInputs {
        kind: m.kind,
        pinned: m.pinned,
        importance: m.importance,
        reinforcements: 0,
        sources: m.sources.len(),
        last_confirmed_at: m.created_at,
    }
}

/// The memory an insert makes of `m` once the store has given it `id`: active, never
/// reinforced, confirmed when created, never recalled. Its `rev` (0 here) is the store's to set,
/// with its `created` event.
pub fn inserted(id: MemoryId, m: NewMemory) -> Memory {
    Memory {
        id,
        namespace: m.namespace,
        kind: m.kind,
        content: m.content,
        claim: m.claim,
        entities: m.entities,
        importance: m.importance,
        reinforcements: 0,
        sources: m.sources,
        provenance: m.provenance,
        created_at: m.created_at,
        last_confirmed_at: m.created_at,
        last_accessed_at: None,
        pinned: m.pinned,
        embedding: m.embedding,
        status: Status::Active,
        rev: 0,
        validity: m.validity,
    }
}

/// `m` if it is active; an error naming `what` (the op) if it is a tombstone, which is never
/// changed again.
pub fn require_active(m: Memory, what: &str) -> Result<Memory> {
    if m.status.is_active() {
        Ok(m)
    } else {
        Err(tombstoned(m.id, what))
    }
}

fn tombstoned(id: MemoryId, what: &str) -> CoreError {
    CoreError::InvalidInput(format!("{what}: memory {id} is tombstoned; a tombstone is never changed or reactivated"))
}

fn check_active(m: &Memory, what: &str) -> Result<()> {
    if m.status.is_active() {
        Ok(())
    } else {
        Err(tombstoned(m.id, what))
    }
}

fn add_source(m: &mut Memory, source: &str) {
    if !m.sources.iter().any(|s| s == source) {
        m.sources.push(source.to_string());
    }
}

/// Restated (`WriteOp::Reinforce`): reinforcements + 1, `source` added to the sources and
/// `turn` to the provenance if new, confirmed at `at`. Only an active memory; a count at its
/// maximum is refused rather than wrapped.
pub fn reinforce(m: &mut Memory, source: &str, turn: Option<TurnId>, at: Timestamp) -> Result<()> {
    check_active(m, "reinforce")?;
    let id = m.id;
    m.reinforcements = m
        .reinforcements
        .checked_add(1)
        .ok_or_else(|| CoreError::InvalidInput(format!("reinforce: memory {id} cannot be reinforced further")))?;
    add_source(m, source);
    if let Some(t) = turn {
        if !m.provenance.turns.contains(&t) {
            m.provenance.turns.push(t);
        }
    }
    m.last_confirmed_at = at;
    Ok(())
}

/// Confirmed by a system of record (`WriteOp::Confirm`): `source` added if new, confirmed at
/// `at`. Only an active memory.
pub fn confirm(m: &mut Memory, source: &str, at: Timestamp) -> Result<()> {
    check_active(m, "confirm")?;
    add_source(m, source);
    m.last_confirmed_at = at;
    Ok(())
}

/// Forgotten (`WriteOp::Tombstone`, `TombstoneNew`): tombstoned at `at` for `reason`, by
/// `superseded_by` if given. Only an active memory (a tombstone is final), and never
/// superseded by itself.
pub fn tombstone(m: &mut Memory, reason: &str, superseded_by: Option<MemoryId>, at: Timestamp) -> Result<()> {
    check_active(m, "tombstone")?;
    if superseded_by == Some(m.id) {
        return Err(CoreError::InvalidInput(format!("tombstone: memory {} cannot supersede itself", m.id)));
    }
    m.status = Status::Tombstoned { reason: reason.to_string(), at, superseded_by };
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::model::{fixtures, MemoryKind};

    #[test]
    fn an_insert_makes_an_active_memory_never_reinforced_confirmed_when_created() {
        let new = fixtures::new_memory(Timestamp(7));
        let m = inserted(MemoryId(3), new.clone());
        assert_eq!((m.id, m.status.clone(), m.reinforcements, m.rev), (MemoryId(3), Status::Active, 0, 0));
        assert_eq!((m.created_at, m.last_confirmed_at, m.last_accessed_at), (Timestamp(7), Timestamp(7), None));
        assert_eq!((m.content, m.sources, m.importance), (new.content, new.sources, new.importance));
    }

    fn memory(id: i64) -> Memory {
        fixtures::memory(id, Timestamp(10))
    }

    fn new_memory(ns: &Namespace) -> NewMemory {
        let m = fixtures::new_memory(Timestamp(7));
        NewMemory { namespace: ns.clone(), sources: vec!["user".into(), "crm".into()], pinned: true, ..m }
    }

    fn message(r: Result<()>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn a_reinforcement_counts_adds_new_sources_and_turns_once_and_confirms() {
        let mut m = memory(3);
        reinforce(&mut m, "user", Some(TurnId(1)), Timestamp(20)).unwrap();
        assert_eq!(m.reinforcements, 1);
        assert_eq!(m.sources, ["user"], "a known source is not added again");
        assert_eq!(m.provenance.turns, [TurnId(1)], "a known turn is not added again");
        assert_eq!(m.last_confirmed_at, Timestamp(20));
        reinforce(&mut m, "crm", Some(TurnId(4)), Timestamp(30)).unwrap();
        assert_eq!(m.reinforcements, 2);
        assert_eq!(m.sources, ["user", "crm"]);
        assert_eq!(m.provenance.turns, [TurnId(1), TurnId(4)]);
        reinforce(&mut m, "crm", None, Timestamp(40)).unwrap();
        assert_eq!((m.reinforcements, m.provenance.turns.len()), (3, 2));
        assert_eq!(m.status, Status::Active);
    }

    #[test]
    fn a_reinforcement_at_the_maximum_count_is_refused_and_changes_nothing() {
        let mut m = memory(3);
        m.reinforcements = u32::MAX;
        let before = m.clone();
        assert_eq!(
            message(reinforce(&mut m, "crm", Some(TurnId(9)), Timestamp(20))),
            "invalid input: reinforce: memory m3 cannot be reinforced further"
        );
        assert_eq!(m, before);
    }

    #[test]
    fn a_confirmation_adds_its_source_once_and_confirms_without_reinforcing() {
        let mut m = memory(3);
        confirm(&mut m, "crm", Timestamp(20)).unwrap();
        confirm(&mut m, "crm", Timestamp(25)).unwrap();
        assert_eq!(m.sources, ["user", "crm"]);
        assert_eq!(m.last_confirmed_at, Timestamp(25));
        assert_eq!(m.reinforcements, 0);
    }

    #[test]
    fn a_tombstone_records_why_when_and_by_what_and_is_final() {
        let mut m = memory(3);
        tombstone(&mut m, "contradicted", Some(MemoryId(5)), Timestamp(20)).unwrap();
        assert_eq!(
            m.status,
            Status::Tombstoned { reason: "contradicted".into(), at: Timestamp(20), superseded_by: Some(MemoryId(5)) }
        );
        assert_eq!(m.last_confirmed_at, Timestamp(10), "forgetting is not a confirmation");
        let gone = m.clone();
        let final_ = "a tombstone is never changed or reactivated";
        assert!(message(tombstone(&mut m, "again", None, Timestamp(30))).contains(final_));
        assert!(message(reinforce(&mut m, "user", None, Timestamp(30)))
            .starts_with("invalid input: reinforce: memory m3 is tombstoned"));
        assert!(message(confirm(&mut m, "crm", Timestamp(30))).contains(final_));
        assert_eq!(m, gone, "a refused op changes nothing");
        assert_eq!(
            require_active(m, "erase").unwrap_err().to_string(),
            format!("invalid input: erase: memory m3 is tombstoned; {final_}")
        );
        assert_eq!(require_active(memory(4), "confirm").unwrap().id, MemoryId(4));
    }

    #[test]
    fn a_memory_cannot_supersede_itself() {
        let mut m = memory(3);
        assert_eq!(
            message(tombstone(&mut m, "x", Some(MemoryId(3)), Timestamp(20))),
            "invalid input: tombstone: memory m3 cannot supersede itself"
        );
        assert!(m.status.is_active());
    }

    #[test]
    fn batch_references_must_point_at_an_insert_of_the_batch() {
        let ns = Namespace::default();
        let insert = WriteOp::Insert { memory: new_memory(&ns), turn: None };
        let forget =
            |superseded_by| WriteOp::Tombstone { id: MemoryId(1), reason: "r".into(), superseded_by, turn: None };
        let forget_new = |index| WriteOp::TombstoneNew { index, reason: "r".into(), superseded_by: None, turn: None };
        check_batch_refs(&[forget(Some(MemoryRef::New(0))), insert.clone(), forget_new(0)]).unwrap();
        check_batch_refs(&[forget(Some(MemoryRef::Existing(MemoryId(9))))]).unwrap();
        assert_eq!(
            message(check_batch_refs(&[insert.clone(), forget(Some(MemoryRef::New(1)))])),
            "invalid input: op 1: superseded_by refers to insert #1 of the batch, but the batch has 1 insert(s)"
        );
        assert_eq!(
            message(check_batch_refs(&[forget_new(0)])),
            "invalid input: op 0: target refers to insert #0 of the batch, but the batch has 0 insert(s)"
        );
    }

    #[test]
    fn an_insert_must_be_of_the_batch_namespace_with_a_finite_importance() {
        let ns = Namespace::default();
        let other = Namespace::new("other").unwrap();
        let m = new_memory(&ns);
        assert_eq!(check_insert(&ns, &m), Ok(()));
        assert_eq!(
            check_insert(&other, &m),
            Err(format!("the memory's namespace {ns} is not the batch's namespace other"))
        );
        let m = NewMemory { importance: f32::NAN, ..m };
        assert_eq!(check_insert(&ns, &m), Err("importance NaN is not a finite number".into()));
    }

    #[test]
    fn an_inserted_memory_decays_from_its_creation_unreinforced() {
        let i = inserted_decay_inputs(&new_memory(&Namespace::default()));
        assert_eq!((i.reinforcements, i.sources, i.last_confirmed_at), (0, 2, Timestamp(7)));
        assert_eq!((i.kind, i.pinned, i.importance), (MemoryKind::Semantic, true, 0.5));
    }
}
