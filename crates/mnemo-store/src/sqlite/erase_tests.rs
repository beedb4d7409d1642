//! Erasure in the SQLite store: the content is gone from every file of the store, a
//! content-free record stays, the history chain still verifies (and still catches a change,
//! erased rows included), and a store of schema version 5 is migrated to one that erases.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use mnemo_contract::chain::{BreakKind, EntryKind};
use mnemo_contract::erase::ErasePlan;
use mnemo_contract::{Claim, CoreError, MemoryRef, Status, Store, Timestamp, WriteOp};
use rusqlite::Connection;

use super::chain_tests::{alpha, mem, ns, reports, sql, store, turn};
use super::schema::{known_version, UNDO_V6};
use super::SqliteStore;

/// Whether any file of the store (database, log, shared memory) holds `needle`.
fn any_file_holds(db: &Path, needle: &str) -> Vec<String> {
    let dir = db.parent().unwrap();
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            let bytes = std::fs::read(&p).unwrap();
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                found.push(p.display().to_string());
            }
        }
    }
    found
}

/// Ben's phone, said twice (the first value superseded), and Ann's tea. Returns the store's
/// path, Ben's two memory ids, Ann's, and the two turns that hold Ben's numbers.
async fn bens_phone(
) -> (tempfile::TempDir, std::path::PathBuf, [mnemo_contract::MemoryId; 3], [mnemo_contract::TurnId; 2]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let s = SqliteStore::open(&path).unwrap();
    let n = ns("alpha");
    let claim = |v: &str| Some(Claim { entity: "Ben".into(), attribute: "phone".into(), value: v.into() });
    let t1 = s.record_turn(turn(&n, "Ben's phone is +1 555 0100. Ann likes tea.", 1_000)).await.unwrap();
    let first = s
        .apply(
            &n,
            Timestamp(1_000),
            vec![
                WriteOp::Insert {
                    memory: mnemo_contract::NewMemory {
                        claim: claim("+1 555 0100"),
                        ..mem(&n, "Ben | phone | +1 555 0100")
                    },
                    turn: Some(t1.id),
                },
                WriteOp::Insert { memory: mem(&n, "Ann likes tea"), turn: Some(t1.id) },
            ],
        )
        .await
        .unwrap();
    let t2 = s.record_turn(turn(&n, "Ben's number changed to +1 555 0199", 2_000)).await.unwrap();
    let second = s
        .apply(
            &n,
            Timestamp(2_000),
            vec![
                WriteOp::Insert {
                    memory: mnemo_contract::NewMemory {
                        claim: claim("+1 555 0199"),
                        ..mem(&n, "Ben | phone | +1 555 0199")
                    },
                    turn: Some(t2.id),
                },
                WriteOp::Tombstone {
                    id: first[0],
                    reason: "superseded".into(),
                    superseded_by: Some(MemoryRef::New(0)),
                    turn: Some(t2.id),
                },
            ],
        )
        .await
        .unwrap();
    (dir, path, [first[0], second[0], first[1]], [t1.id, t2.id])
}

fn plan(ms: &[mnemo_contract::MemoryId], redact: Vec<(mnemo_contract::TurnId, String)>) -> ErasePlan {
    ErasePlan {
        target: "claim".into(),
        reason: "GDPR request 7".into(),
        by: Some("dpo".into()),
        memories: ms.to_vec(),
        turns: vec![],
        redact,
    }
}

#[tokio::test]
async fn an_erased_value_leaves_no_byte_in_any_file_and_the_chain_still_verifies() {
    let (_dir, path, [old, new, ann], [t1, t2]) = bens_phone().await;
    assert!(!any_file_holds(&path, "555 0100").is_empty(), "the fixture must hold the number before");
    let before = alpha(&reports(&path).await).entries;
    {
        let s = SqliteStore::open(&path).unwrap();
        let r = s
            .erase(
                &ns("alpha"),
                Timestamp(9_000),
                plan(
                    &[old, new],
                    vec![
                        (t1, "Ben's phone is [erased]. Ann likes tea.".into()),
                        (t2, "Ben's number changed to [erased]".into()),
                    ],
                ),
            )
            .await
            .unwrap();
        assert_eq!((r.memories.clone(), r.redacted.clone(), r.turns.len()), (vec![old, new], vec![t1, t2], 0));
        assert_eq!(r.reason, "GDPR request 7");
        assert_eq!(s.erasures(&ns("alpha")).await.unwrap(), vec![r.clone()]);
        let got = s.get_many(&ns("alpha"), &[old, new, ann]).await.unwrap();
        for m in &got[..2] {
            assert_eq!((m.content.as_str(), m.claim.is_none(), m.entities.is_empty()), ("", true, true), "{m:?}");
            match &m.status {
                Status::Tombstoned { reason, at, .. } => {
                    assert_eq!((reason.as_str(), *at), ("erased: GDPR request 7", Timestamp(9_000)))
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(got[2].content, "Ann likes tea", "what was not named stays");
        let h = s.history(&ns("alpha"), new).await.unwrap();
        assert_eq!(h.last().unwrap().event, "erased");
        assert!(h.iter().all(|e| !e.detail.contains("555")), "{h:?}");
        let turns = s.turns(&ns("alpha")).await.unwrap();
        assert_eq!(turns[0].text, "Ben's phone is [erased]. Ann likes tea.");
        // Erasing it again finds nothing left.
        let again = s.erase(&ns("alpha"), Timestamp(9_500), plan(&[old], vec![])).await.unwrap_err();
        assert!(matches!(again, CoreError::InvalidInput(_)), "{again:?}");
        // An id not in the namespace is named.
        let err = s.erase(&ns("beta"), Timestamp(9_500), plan(&[ann], vec![])).await.unwrap_err();
        assert!(matches!(&err, CoreError::NotFound(m) if m.contains(&ann.to_string())), "{err:?}");
    }
    for needle in ["555 0100", "555 0199"] {
        assert_eq!(any_file_holds(&path, needle), Vec::<String>::new(), "{needle} left in a file");
    }
    let r = reports(&path).await;
    let a = alpha(&r);
    assert!(a.ok(), "{a:?}");
    // + the two `erased` events and the erasure.
    assert_eq!(a.entries, before + 3);

    // The chain still catches a change, of an erased row or of the erasure record.
    let copy = path.with_file_name("tampered.db");
    std::fs::copy(&path, &copy).unwrap();
    sql(&copy, &format!("UPDATE turns SET text = 'Ben''s phone is 000' WHERE id = {}", t1.0));
    let bad = alpha(&reports(&copy).await).first_bad.clone().unwrap();
    assert_eq!((bad.entry, bad.id, bad.problem), (EntryKind::Turn, t1.0, BreakKind::ContentHashMismatch), "{bad:?}");
    std::fs::copy(&path, &copy).unwrap();
    sql(&copy, "UPDATE erasures SET reason = 'no reason'");
    let bad = alpha(&reports(&copy).await).first_bad.clone().unwrap();
    assert_eq!((bad.entry, bad.problem), (EntryKind::Erasure, BreakKind::ContentHashMismatch), "{bad:?}");
    std::fs::copy(&path, &copy).unwrap();
    sql(&copy, "UPDATE erased_rows SET after = zeroblob(32) WHERE kind = 'turn'");
    let bad = alpha(&reports(&copy).await).first_bad.clone().unwrap();
    assert_eq!((bad.entry, bad.problem), (EntryKind::Turn, BreakKind::ContentHashMismatch), "{bad:?}");
}

#[tokio::test]
async fn a_store_of_schema_version_5_is_migrated_and_then_erases() {
    let (_dir, path, ids, turns) = store().await;
    sql(&path, UNDO_V6);
    let version =
        |p: &Path| -> i64 { Connection::open(p).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap() };
    assert_eq!(version(&path), 5);
    {
        let s = SqliteStore::open(&path).unwrap();
        s.erase(&ns("alpha"), Timestamp(9_000), ErasePlan { turns: vec![turns[0]], ..plan(&[ids[0]], vec![]) })
            .await
            .unwrap();
    }
    assert_eq!(version(&path), known_version());
    for r in reports(&path).await {
        assert!(r.ok(), "{r:?}");
    }
}
