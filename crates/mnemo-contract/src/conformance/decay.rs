//! The Store's decay due-time contract (`Store::due_for_decay`): whatever a store keeps, it
//! answers exactly what computing every due time from the active memories would, under the
//! rule asked for, through inserts, reinforcements, confirmations, tombstones, a rule change
//! and paging.
use crate::decay_due::{due_by_scan, DecayRule, DuePage};
use crate::model::*;
use crate::time::{Timestamp, DAY_MS};
use crate::Store;

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

fn at(days: f64) -> Timestamp {
    Timestamp(1_780_000_000_000 + (days * DAY_MS as f64) as i64)
}

fn mem(ns: &Namespace, i: usize, kind: MemoryKind, importance: f32, pinned: bool) -> WriteOp {
    WriteOp::Insert {
        memory: NewMemory {
            validity: Default::default(),
            namespace: ns.clone(),
            kind,
            content: format!("memory {i}"),
            claim: None,
            entities: vec![],
            importance,
            sources: vec!["user".to_string()],
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake-model".to_string() },
            created_at: at(i as f64),
            pinned,
            embedding: None,
        },
        turn: None,
    }
}

/// (due, id) of every due memory at each of several times, read in pages of 2 from the store
/// and from the scan.
async fn compare(s: &dyn Store, a: &Namespace, rule: &DecayRule, what: &str) {
    for day in [-1.0, 0.0, 3.0, 10.0, 20.0, 40.0, 80.0, 400.0] {
        let now = at(day);
        let mut got = Vec::new();
        let mut after = None;
        loop {
            let page = s.due_for_decay(a, rule, &DuePage { now, after, limit: 2 }).await.unwrap();
            assert!(page.len() <= 2, "{what}: a page holds at most `limit`");
            got.extend(page.iter().map(|d| (d.due, d.memory.id, d.memory.namespace.clone())));
            match page.last() {
                Some(l) if page.len() == 2 => after = Some((l.due, l.memory.id)),
                _ => break,
            }
        }
        let active = s.active(a).await.unwrap();
        let want: Vec<_> = due_by_scan(active, rule, &DuePage { now, after: None, limit: usize::MAX })
            .into_iter()
            .map(|d| (d.due, d.memory.id, d.memory.namespace))
            .collect();
        assert_eq!(got, want, "{what}: due memories at day {day}");
    }
}

/// Due memories match the scan through every kind of write and a rule change.
pub async fn due_for_decay_matches_the_scan(s: &dyn Store) {
    let a = ns("decay-a");
    let b = ns("decay-b");
    let rule = DecayRule::default();
    let mut ops = Vec::new();
    for (i, imp) in [0.5f32, 0.1, 0.9, 0.01, 0.3, 0.5, 0.7].into_iter().enumerate() {
        ops.push(mem(&a, i, MemoryKind::Episodic, imp, false));
    }
    ops.push(mem(&a, 7, MemoryKind::Episodic, 0.2, true));
    ops.push(mem(&a, 8, MemoryKind::Semantic, 0.05, false));
    let ids = s.apply(&a, at(0.0), ops).await.unwrap();
    s.apply(&b, at(0.0), vec![mem(&b, 0, MemoryKind::Episodic, 0.01, false)]).await.unwrap();
    compare(s, &a, &rule, "after inserts").await;

    let before = s.due_for_decay(&a, &rule, &DuePage { now: at(1000.0), after: None, limit: 100 }).await.unwrap();
    let due_of =
        |id: MemoryId, list: &[crate::decay_due::DueMemory]| list.iter().find(|d| d.memory.id == id).map(|d| d.due);
    assert!(due_of(ids[7], &before).is_none(), "a pinned memory is never due");
    assert!(due_of(ids[8], &before).is_none(), "a memory of a kind that does not decay is never due");

    s.apply(&a, at(5.0), vec![WriteOp::Reinforce { id: ids[0], source: "alice".into(), turn: None }]).await.unwrap();
    s.apply(&a, at(6.0), vec![WriteOp::Confirm { id: ids[4], source: "erp".into() }]).await.unwrap();
    s.apply(
        &a,
        at(7.0),
        vec![WriteOp::Tombstone { id: ids[5], reason: "test".into(), superseded_by: None, turn: None }],
    )
    .await
    .unwrap();
    s.touch(&a, &[ids[2]], at(8.0)).await.unwrap();
    compare(s, &a, &rule, "after reinforce, confirm, tombstone and touch").await;
    let after = s.due_for_decay(&a, &rule, &DuePage { now: at(1000.0), after: None, limit: 100 }).await.unwrap();
    assert!(
        due_of(ids[0], &after) > due_of(ids[0], &before),
        "reinforcing moves the due time later: {:?} -> {:?}",
        due_of(ids[0], &before),
        due_of(ids[0], &after)
    );
    assert!(due_of(ids[5], &after).is_none(), "a tombstoned memory is never due");

    let slower = DecayRule { half_life_days: 30.0, threshold: 0.05, ..rule.clone() };
    compare(s, &a, &slower, "under another rule").await;
    let everything = DecayRule { decaying_kinds: MemoryKind::ALL.to_vec(), ..rule.clone() };
    compare(s, &a, &everything, "when every kind decays").await;
    // New writes follow the rule now in force, and the old rule still answers right.
    s.apply(&a, at(9.0), vec![mem(&a, 9, MemoryKind::Semantic, 0.2, false)]).await.unwrap();
    compare(s, &a, &everything, "a write under the new rule").await;
    compare(s, &a, &rule, "back to the first rule").await;
}
