//! The tamper-evident history of the SQLite store: the chain is built per namespace by every
//! write, an untouched store verifies, and a changed, removed, reordered or inserted row is
//! named; a store from before the chain is chained by its migration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use mnemo_contract::chain::{BreakKind, ChainReport, EntryKind};
use mnemo_contract::{
    ClientKind, MemoryId, MemoryKind, Namespace, NewMemory, NewTurn, Provenance, Store, Timestamp, TurnId, WriteOp,
};
use rusqlite::Connection;

use super::schema::{known_version, UNDO_V5};
use super::SqliteStore;

pub(super) fn ns(name: &str) -> Namespace {
    Namespace::new(name).unwrap()
}

pub(super) fn mem(n: &Namespace, content: &str) -> NewMemory {
    NewMemory {
        validity: Default::default(),
        namespace: n.clone(),
        kind: MemoryKind::Semantic,
        content: content.to_string(),
        claim: None,
        entities: vec!["acme".to_string()],
        importance: 0.7,
        sources: vec!["user".to_string()],
        provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake".to_string() },
        created_at: Timestamp(1_000),
        pinned: false,
        embedding: None,
    }
}

pub(super) fn turn(n: &Namespace, text: &str, at: i64) -> NewTurn {
    NewTurn { namespace: n.clone(), source: "user".into(), at: Timestamp(at), text: text.into(), external_id: None }
}

/// Two namespaces, each with turns, inserts, a reinforcement, a confirmation, a supersession
/// and a forget. Returns (alpha's memory ids, alpha's turn ids).
async fn populate(s: &SqliteStore) -> (Vec<MemoryId>, Vec<TurnId>) {
    let (a, b) = (ns("alpha"), ns("beta"));
    let mut turns = Vec::new();
    let mut ids = Vec::new();
    for (i, n) in [&a, &b].into_iter().enumerate() {
        let t1 = s.record_turn(turn(n, "Ben's phone is 555-0100", 1_000 + i as i64)).await.unwrap();
        let got = s
            .apply(
                n,
                Timestamp(1_000),
                vec![
                    WriteOp::Insert { memory: mem(n, "Ben | phone | 555-0100"), turn: Some(t1.id) },
                    WriteOp::Insert { memory: mem(n, "Northwind ships on Tuesdays"), turn: Some(t1.id) },
                ],
            )
            .await
            .unwrap();
        let t2 = s
            .record_turns(vec![turn(n, "Ben's phone is now 555-0199", 2_000), turn(n, "forget Northwind", 2_001)])
            .await
            .unwrap();
        let new = s
            .apply(
                n,
                Timestamp(2_000),
                vec![
                    WriteOp::Insert { memory: mem(n, "Ben | phone | 555-0199"), turn: Some(t2[0].id) },
                    WriteOp::Tombstone {
                        id: got[0],
                        reason: "superseded".into(),
                        superseded_by: Some(mnemo_contract::MemoryRef::New(0)),
                        turn: Some(t2[0].id),
                    },
                    WriteOp::Reinforce { id: got[1], source: "erp".into(), turn: Some(t2[0].id) },
                    WriteOp::Confirm { id: got[1], source: "crm".into() },
                ],
            )
            .await
            .unwrap();
        s.apply(
            n,
            Timestamp(3_000),
            vec![WriteOp::Tombstone {
                id: got[1],
                reason: "forgotten".into(),
                superseded_by: None,
                turn: Some(t2[1].id),
            }],
        )
        .await
        .unwrap();
        if i == 0 {
            ids = vec![got[0], got[1], new[0]];
            turns = vec![t1.id, t2[0].id, t2[1].id];
        }
    }
    (ids, turns)
}

pub(super) async fn reports(path: &Path) -> Vec<ChainReport> {
    let s = SqliteStore::open_read_only(path).unwrap();
    s.verify_history().await.unwrap().expect("the SQLite store keeps a chain")
}

pub(super) fn alpha(reports: &[ChainReport]) -> &ChainReport {
    reports.iter().find(|r| r.namespace == "alpha").unwrap()
}

pub(super) fn sql(path: &Path, sql: &str) {
    Connection::open(path).unwrap().execute_batch(sql).unwrap();
}

/// A populated store file and its alpha memory and turn ids.
pub(super) async fn store() -> (tempfile::TempDir, std::path::PathBuf, Vec<MemoryId>, Vec<TurnId>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let (ids, turns) = {
        let s = SqliteStore::open(&path).unwrap();
        populate(&s).await
    };
    (dir, path, ids, turns)
}

#[tokio::test]
async fn every_write_is_chained_per_namespace_and_an_untouched_store_verifies() {
    let (_dir, path, _, _) = store().await;
    let r = reports(&path).await;
    assert_eq!(r.iter().map(|r| r.namespace.as_str()).collect::<Vec<_>>(), ["alpha", "beta"]);
    // Per namespace: 3 turns; events: 3 created, 1 tombstone (superseded), 1 reinforced,
    // 1 confirmed, 1 tombstone (forgotten).
    for r in &r {
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.entries, 3 + 7, "{r:?}");
        assert_eq!(r.head.as_ref().unwrap().seq, 10);
    }
    assert_ne!(r[0].head.as_ref().unwrap().hash, r[1].head.as_ref().unwrap().hash, "each namespace its own chain");
    // The order of the chain is the order of the writes.
    let kinds: Vec<String> = Connection::open(&path)
        .unwrap()
        .prepare("SELECT kind FROM history_chain WHERE namespace = 'alpha' ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds, ["turn", "event", "event", "turn", "turn", "event", "event", "event", "event", "event"]);
    // The heads the store records are the verified ones, and a backup carries them.
    let s = SqliteStore::open(&path).unwrap();
    let heads = s.chain_heads().await.unwrap();
    assert_eq!(heads, r.iter().map(|r| r.head.clone().unwrap()).collect::<Vec<_>>());
    let info = s.backup_to(&path.with_file_name("backup.db")).await.unwrap();
    assert_eq!(info.chain_heads, heads);
}

#[tokio::test]
async fn a_flipped_byte_of_an_event_is_named() {
    let (_dir, path, ids, _) = store().await;
    let seq: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT seq FROM memory_events WHERE memory_id = ?1 AND event = 'tombstoned'", [ids[0].0], |r| {
            r.get(0)
        })
        .unwrap();
    // "superseded" -> "superseder": one byte.
    sql(
        &path,
        &format!("UPDATE memory_events SET detail = replace(detail, 'superseded\"', 'superseder\"') WHERE seq = {seq}"),
    );
    let r = reports(&path).await;
    let bad = alpha(&r).first_bad.clone().expect("a changed event is caught");
    assert_eq!((bad.entry, bad.id, bad.problem), (EntryKind::Event, seq, BreakKind::ContentHashMismatch));
    assert_eq!(bad.seq, 7, "the supersession is entry 7 of alpha's chain: {bad:?}");
    assert!(r.iter().find(|r| r.namespace == "beta").unwrap().ok(), "the other namespace is untouched");
}

#[tokio::test]
async fn a_flipped_byte_of_a_memory_or_a_turn_is_named() {
    let (_dir, path, ids, turns) = store().await;
    sql(&path, &format!("UPDATE memories SET content = 'Ben | phone | 555-0101' WHERE id = {}", ids[0].0));
    let bad = alpha(&reports(&path).await).first_bad.clone().unwrap();
    assert_eq!((bad.seq, bad.entry, bad.problem), (2, EntryKind::Event, BreakKind::ContentHashMismatch), "{bad:?}");
    sql(&path, &format!("UPDATE memories SET content = 'Ben | phone | 555-0100' WHERE id = {}", ids[0].0));
    assert!(alpha(&reports(&path).await).ok(), "put back, it verifies again");
    sql(&path, &format!("UPDATE turns SET text = 'forget northwind' WHERE id = {}", turns[2].0));
    let bad = alpha(&reports(&path).await).first_bad.clone().unwrap();
    assert_eq!(
        (bad.seq, bad.entry, bad.id, bad.problem),
        (5, EntryKind::Turn, turns[2].0, BreakKind::ContentHashMismatch)
    );
}

#[tokio::test]
async fn a_deleted_event_is_named_with_or_without_its_chain_entry() {
    let (_dir, path, ids, _) = store().await;
    let seq: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT seq FROM memory_events WHERE memory_id = ?1 AND event = 'reinforced'", [ids[1].0], |r| {
            r.get(0)
        })
        .unwrap();
    sql(&path, &format!("DELETE FROM memory_events WHERE seq = {seq}"));
    let bad = alpha(&reports(&path).await).first_bad.clone().unwrap();
    assert_eq!((bad.seq, bad.entry, bad.id, bad.problem), (8, EntryKind::Event, seq, BreakKind::RowMissing));
    // Its chain entry removed too: the entry after it names the gap.
    sql(&path, "DELETE FROM history_chain WHERE namespace = 'alpha' AND seq = 8");
    let bad = alpha(&reports(&path).await).first_bad.clone().unwrap();
    assert_eq!((bad.seq, bad.problem), (9, BreakKind::SequenceGap), "{bad:?}");
    // And renumbered to hide the gap: the previous hash no longer matches.
    sql(&path, "UPDATE history_chain SET seq = seq - 1 WHERE namespace = 'alpha' AND seq > 8");
    let bad = alpha(&reports(&path).await).first_bad.clone().unwrap();
    assert_eq!((bad.seq, bad.problem), (8, BreakKind::PrevHashMismatch), "{bad:?}");
    // The last entry removed outright (row and entry): the recorded head names it.
    let (_dir2, path2, _, _) = store().await;
    let (kind, id): (String, i64) = Connection::open(&path2)
        .unwrap()
        .query_row("SELECT kind, ref_id FROM history_chain WHERE namespace = 'alpha' AND seq = 10", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(kind, "event");
    sql(&path2, &format!("DELETE FROM memory_events WHERE seq = {id}; DELETE FROM history_chain WHERE namespace = 'alpha' AND seq = 10"));
    let bad = alpha(&reports(&path2).await).first_bad.clone().unwrap();
    assert_eq!(bad.problem, BreakKind::HeadMismatch, "{bad:?}");
}

#[tokio::test]
async fn swapped_entries_and_rows_outside_the_chain_are_named() {
    let (_dir, path, ids, _) = store().await;
    // Swap what entries 2 and 3 point at (the two inserts of one batch).
    sql(
        &path,
        "UPDATE history_chain SET ref_id = CASE seq WHEN 2 THEN (SELECT ref_id FROM history_chain WHERE namespace = 'alpha' AND seq = 3) \
         ELSE (SELECT ref_id FROM history_chain WHERE namespace = 'alpha' AND seq = 2) END \
         WHERE namespace = 'alpha' AND seq IN (2, 3)",
    );
    let bad = alpha(&reports(&path).await).first_bad.clone().unwrap();
    assert_eq!((bad.seq, bad.problem), (2, BreakKind::ContentHashMismatch), "{bad:?}");
    // An event written outside the chain.
    let (_dir2, path2, ids2, _) = store().await;
    sql(
        &path2,
        &format!(
            "INSERT INTO memory_events (memory_id, at, event, turn_id, detail) VALUES ({}, 9000, 'confirmed', NULL, '{{}}')",
            ids2[2].0
        ),
    );
    let bad = alpha(&reports(&path2).await).first_bad.clone().unwrap();
    assert_eq!((bad.entry, bad.problem), (EntryKind::Event, BreakKind::Unchained), "{bad:?}");
    let _ = ids;
}

#[tokio::test]
async fn a_store_from_before_the_chain_is_chained_by_its_migration_and_verifies() {
    let (_dir, path, ids, _) = store().await;
    sql(&path, UNDO_V5);
    assert_eq!(
        Connection::open(&path).unwrap().query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)).unwrap(),
        4
    );
    {
        let s = SqliteStore::open(&path).unwrap();
        // Written after the upgrade: continues the backfilled chain.
        s.apply(
            &ns("alpha"),
            Timestamp(4_000),
            vec![WriteOp::Reinforce { id: ids[2], source: "erp".into(), turn: None }],
        )
        .await
        .unwrap();
    }
    let user_version: i64 =
        Connection::open(&path).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(user_version, known_version());
    let r = reports(&path).await;
    for r in &r {
        assert!(r.ok(), "{r:?}");
    }
    assert_eq!(alpha(&r).entries, 11);
    // The backfill order: by time, turns before events, then id.
    let kinds: Vec<String> = Connection::open(&path)
        .unwrap()
        .prepare("SELECT kind FROM history_chain WHERE namespace = 'alpha' ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds, ["turn", "event", "event", "turn", "event", "event", "event", "event", "turn", "event", "event"]);
    // And a flipped byte after the upgrade is caught as before.
    sql(&path, &format!("UPDATE memories SET content = 'Ben | phone | 555-0109' WHERE id = {}", ids[2].0));
    let bad = alpha(&reports(&path).await).first_bad.clone().unwrap();
    assert_eq!(bad.problem, BreakKind::ContentHashMismatch);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_beside_a_writer_sees_whole_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let writer = std::sync::Arc::new(SqliteStore::open(&path).unwrap());
    let a = ns("alpha");
    let w = {
        let (s, a) = (std::sync::Arc::clone(&writer), a.clone());
        tokio::spawn(async move {
            for i in 0..150 {
                let t = s.record_turn(turn(&a, &format!("turn {i}"), i)).await.unwrap();
                s.apply(
                    &a,
                    Timestamp(i),
                    vec![WriteOp::Insert { memory: mem(&a, &format!("m {i}")), turn: Some(t.id) }],
                )
                .await
                .unwrap();
            }
        })
    };
    let reader = SqliteStore::open_read_only(&path).unwrap();
    let mut checks = 0;
    while !w.is_finished() {
        for r in reader.verify_history().await.unwrap().unwrap() {
            assert!(r.ok(), "a check beside the writer: {r:?}");
        }
        checks += 1;
    }
    w.await.unwrap();
    assert!(checks > 1, "the checks ran while the writer wrote");
    let r = reader.verify_history().await.unwrap().unwrap();
    assert_eq!((r[0].entries, r[0].ok()), (300, true));
}
