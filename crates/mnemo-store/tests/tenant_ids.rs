//! No cross-tenant signal through ids: in the same store (two copies of one fresh store file),
//! everything namespace B reads back — memory ids, turn ids, memories, history — is identical
//! whether or not namespace A wrote in between, except the store-wide change sequence (`rev`,
//! an event's `seq`), which is internal (the CLI does not show it to a tenant).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;

use mnemo_contract::{ClientKind, MemoryKind, Namespace, NewMemory, NewTurn, Provenance, Store, Timestamp, WriteOp};
use mnemo_store::sqlite::SqliteStore;

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

fn mem(n: &Namespace, content: &str) -> WriteOp {
    WriteOp::Insert {
        memory: NewMemory {
            validity: Default::default(),
            namespace: n.clone(),
            kind: MemoryKind::Semantic,
            content: content.to_string(),
            claim: None,
            entities: vec!["vault".to_string()],
            importance: 0.5,
            sources: vec!["user".to_string()],
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "m".to_string() },
            created_at: Timestamp(1),
            pinned: false,
            embedding: None,
        },
        turn: None,
    }
}

fn turn(n: &Namespace, text: &str) -> NewTurn {
    NewTurn { namespace: n.clone(), source: "user".into(), at: Timestamp(1), text: text.into(), external_id: None }
}

/// B's history with A writing in between (or not); returns what B reads back, counters blanked.
async fn world(path: &Path, a_writes: bool) -> String {
    let s = SqliteStore::open(path).unwrap();
    let (a, b) = (ns("a"), ns("b"));
    let t = s.record_turn(turn(&b, "b first")).await.unwrap();
    let ids = s.apply(&b, Timestamp(2), vec![mem(&b, "vault owner is Ana"), mem(&b, "pin 1234")]).await.unwrap();
    if a_writes {
        for i in 0..20 {
            s.record_turn(turn(&a, &format!("a {i}"))).await.unwrap();
            s.apply(&a, Timestamp(3), vec![mem(&a, &format!("a note {i}"))]).await.unwrap();
        }
    }
    let t2 = s.record_turn(turn(&b, "b second")).await.unwrap();
    let more = s
        .apply(
            &b,
            Timestamp(4),
            vec![
                mem(&b, "vault owner is Bob"),
                WriteOp::Reinforce { id: ids[1], source: "user".into(), turn: Some(t2.id) },
                WriteOp::Tombstone {
                    id: ids[0],
                    reason: "superseded".into(),
                    superseded_by: Some(mnemo_contract::MemoryRef::New(0)),
                    turn: Some(t2.id),
                },
            ],
        )
        .await
        .unwrap();
    let mut memories = s.all_memories(&b).await.unwrap();
    memories.iter_mut().for_each(|m| m.rev = 0);
    let mut history = Vec::new();
    for m in &memories {
        let mut h = s.history(&b, m.id).await.unwrap();
        h.iter_mut().for_each(|e| e.seq = 0);
        history.push(h);
    }
    let turns = s.turns(&b).await.unwrap();
    format!("{t:?}\n{ids:?}\n{t2:?}\n{more:?}\n{memories:?}\n{history:?}\n{turns:?}")
}

#[tokio::test(flavor = "multi_thread")]
async fn b_reads_the_same_ids_whether_or_not_a_wrote() {
    let d = tempfile::tempdir().unwrap();
    let (one, two) = (d.path().join("one.db"), d.path().join("two.db"));
    // One fresh store (its id key drawn at creation), copied: the same store twice.
    drop(SqliteStore::open(&one).unwrap());
    std::fs::copy(&one, &two).unwrap();
    let with = world(&one, true).await;
    let without = world(&two, false).await;
    assert_eq!(with, without, "B's view moves with A's writes");
    // And the ids are not small store-wide counters (the range is the namespace's own).
    let s = SqliteStore::open(&one).unwrap();
    let a_ids: Vec<i64> = s.all_memories(&ns("a")).await.unwrap().iter().map(|m| m.id.0).collect();
    let b_ids: Vec<i64> = s.all_memories(&ns("b")).await.unwrap().iter().map(|m| m.id.0).collect();
    assert!(a_ids.windows(2).all(|w| w[1] == w[0] + 1), "A's ids are A's own sequence: {a_ids:?}");
    assert_eq!(b_ids.len(), 3);
    assert!(b_ids.iter().all(|i| *i < (1i64 << 53)), "ids stay exact in JSON doubles: {b_ids:?}");
    assert_ne!(a_ids[0] >> 32, b_ids[0] >> 32, "namespaces number in ranges of their own");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_with_store_wide_ids_keeps_its_order() {
    // Rows written before per-namespace ids (small ids): new ids of the namespace come after.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("old.db");
    let b = ns("b");
    {
        let s = SqliteStore::open(&p).unwrap();
        s.apply(&b, Timestamp(1), vec![mem(&b, "first")]).await.unwrap();
    }
    // Rewrite the id as an old build would have given it (1), and drop the namespace's range.
    {
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch(
            "PRAGMA foreign_keys = OFF; UPDATE memories SET id = 1; UPDATE memory_events SET memory_id = 1; UPDATE memory_entities SET memory_id = 1; \
             DELETE FROM store_meta WHERE key LIKE 'ns_tag:%' OR key LIKE 'tag:%';",
        )
        .unwrap();
    }
    let s = SqliteStore::open(&p).unwrap();
    let new = s.apply(&b, Timestamp(2), vec![mem(&b, "second")]).await.unwrap()[0];
    assert!(new.0 > 1);
    let all = s.all_memories(&b).await.unwrap();
    assert_eq!(all.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["first", "second"]);
}
