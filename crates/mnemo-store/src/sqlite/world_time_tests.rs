//! World time in the SQLite store: a memory's validity interval is kept, chained (changing it
//! breaks the history chain) and a store of schema version 6 is migrated to one that keeps it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mnemo_contract::chain::{BreakKind, EntryKind};
use mnemo_contract::{Store, Timestamp, Validity, WriteOp};
use rusqlite::Connection;

use super::chain_tests::{alpha, mem, ns, reports, sql, store};
use super::schema::{known_version, UNDO_V7};
use super::SqliteStore;

#[tokio::test]
async fn a_validity_is_kept_chained_and_migrated_into() {
    let (_dir, path, _ids, _turns) = store().await;
    sql(&path, UNDO_V7);
    let version =
        || -> i64 { Connection::open(&path).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap() };
    assert_eq!(version(), 6);
    let lisbon = Validity { from: Some(Timestamp(1_000_000)), to: Some(Timestamp(2_000_000)) };
    let id = {
        let s = SqliteStore::open(&path).unwrap();
        let n = ns("alpha");
        let new = mnemo_contract::NewMemory { validity: lisbon, ..mem(&n, "Ben lived in Lisbon from 2019 to 2021") };
        let ids = s.apply(&n, Timestamp(9_000), vec![WriteOp::Insert { memory: new, turn: None }]).await.unwrap();
        let got = s.get_many(&n, &ids).await.unwrap().remove(0);
        assert_eq!(got.validity, lisbon);
        ids[0]
    };
    assert_eq!(version(), known_version());
    for r in reports(&path).await {
        assert!(r.ok(), "a chain made before and after the migration verifies: {r:?}");
    }
    sql(&path, &format!("UPDATE memories SET valid_to = 3000000 WHERE id = {}", id.0));
    let bad = alpha(&reports(&path).await).first_bad.clone().unwrap();
    assert_eq!((bad.entry, bad.problem), (EntryKind::Event, BreakKind::ContentHashMismatch), "{bad:?}");
}
