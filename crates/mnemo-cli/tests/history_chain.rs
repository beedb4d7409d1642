//! The tamper-evident history on the command line (issue 41): in a copy of a store, one
//! flipped byte of a stored event (in the file itself) and one deleted event are each named by
//! `mnemo verify` (namespace, entry, event id, what is wrong; exit 1); the untouched store
//! verifies (exit 0). A history export verifies offline, and a changed export is named.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;

mod cli_run;
use cli_run::{mnemo, ok, text};

/// A data directory with a supersession and a forget (closed cleanly: no WAL beside it).
fn seeded(dir: &Path) {
    ok(&mnemo(dir, &["remember", "[SEM] Ben | phone | 555-0100\n[SEM] Northwind | ships | Tuesdays"]));
    ok(&mnemo(dir, &["remember", "[SEM] Ben | phone | 555-0199"]));
    ok(&mnemo(dir, &["forget", "Northwind"]));
    assert!(!dir.join("mnemo.db-wal").exists());
}

fn copy_store(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(from.join("mnemo.db"), to.join("mnemo.db")).unwrap();
}

/// The seq of the forget's tombstone event, and where its reason sits in the file's
/// `memory_events` row (the memory row holds the same words, which are not chained: the
/// event's copy is the one that is).
fn forget_event(db: &Path) -> i64 {
    let raw = rusqlite::Connection::open(db).unwrap();
    raw.query_row("SELECT seq FROM memory_events WHERE detail LIKE '%forgotten on command%'", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_flipped_byte_or_a_deleted_event_is_named_and_an_untouched_store_verifies() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    seeded(&store);

    // Untouched: verifies, naming each namespace's entries and head.
    let (out, _) = ok(&mnemo(&store, &["verify"]));
    assert!(out.contains("history: namespace default: 8 entries verified, head entry 8 "), "{out}");
    let json: serde_json::Value = serde_json::from_slice(&mnemo(&store, &["verify", "--json"]).stdout).unwrap();
    assert_eq!(json["history"]["verified"], true, "{json}");
    assert_eq!(json["history"]["namespaces"][0]["entries"], 8);

    // One byte of the stored event flipped in the file itself (SQLite's own check stays clean).
    let flipped = d.path().join("flipped");
    copy_store(&store, &flipped);
    let db = flipped.join("mnemo.db");
    let seq = forget_event(&db);
    let mut bytes = std::fs::read(&db).unwrap();
    let needle = b"\"reason\":\"forgotten on command";
    let at = bytes.windows(needle.len()).position(|w| w == needle).expect("the event's detail is in the file");
    bytes[at + 10] ^= 0x01; // "forgotten" -> "gorgotten"
    std::fs::write(&db, bytes).unwrap();
    let v = mnemo(&flipped, &["verify"]);
    let (out, err) = text(&v);
    assert_eq!(v.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("integrity_check: ok"), "the file is sound to SQLite: {out}");
    assert!(
        out.contains(&format!("namespace default: BROKEN at entry 8 (event {seq}): content hash mismatch")),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_slice(&mnemo(&flipped, &["verify", "--json"]).stdout).unwrap();
    let bad = &json["history"]["namespaces"][0]["first_bad"];
    assert_eq!((bad["seq"].as_i64(), bad["entry"].as_str(), bad["id"].as_i64()), (Some(8), Some("event"), Some(seq)));
    assert_eq!(bad["problem"], "content_hash_mismatch");
    assert_eq!((json["sound"].as_bool(), json["integrity_ok"].as_bool()), (Some(false), Some(true)), "{json}");

    // One event deleted (the supersession's tombstone, entry 6): named.
    let deleted = d.path().join("deleted");
    copy_store(&store, &deleted);
    let db = deleted.join("mnemo.db");
    let raw = rusqlite::Connection::open(&db).unwrap();
    let gone: i64 =
        raw.query_row("SELECT seq FROM memory_events WHERE detail LIKE '%superseded:%'", [], |r| r.get(0)).unwrap();
    raw.execute("DELETE FROM memory_events WHERE seq = ?1", [gone]).unwrap();
    drop(raw);
    let v = mnemo(&deleted, &["verify"]);
    let (out, _) = text(&v);
    assert_eq!(v.status.code(), Some(1), "{out}");
    assert!(out.contains(&format!("BROKEN at entry 6 (event {gone}): its row is missing (removed)")), "{out}");

    // The store itself is untouched by all this.
    assert!(ok(&mnemo(&store, &["verify"])).0.contains("history: verified"));
}

#[test]
fn a_history_export_verifies_offline_and_a_changed_one_is_named() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    seeded(&store);
    let (export, err) = ok(&mnemo(&store, &["export", "--history"]));
    assert!(err.contains("exported 8 history entries of namespace default (chain head: entry 8 "), "{err}");
    let lines: Vec<&str> = export.lines().collect();
    assert_eq!(lines.len(), 9, "8 entries and the head");
    let head: serde_json::Value = serde_json::from_str(lines[8]).unwrap();
    assert_eq!(head["chain_head"]["seq"], 8);
    // The head the store verifies to is the export's.
    let (out, _) = ok(&mnemo(&store, &["verify"]));
    assert!(out.contains(head["chain_head"]["hash"].as_str().unwrap()), "{out}");

    let file = d.path().join("history.jsonl");
    std::fs::write(&file, &export).unwrap();
    // Offline: no data directory needed.
    let nowhere = d.path().join("nowhere");
    let (out, _) = ok(&mnemo(&nowhere, &["verify", "--export", file.to_str().unwrap()]));
    assert!(out.contains("namespace default: 8 entries verified"), "{out}");
    assert!(!nowhere.exists(), "an offline check creates nothing");

    // A changed value in the export (the turn that said it comes first): named.
    let changed = d.path().join("changed.jsonl");
    std::fs::write(&changed, export.replace("555-0199", "555-0198")).unwrap();
    let v = mnemo(&nowhere, &["verify", "--export", changed.to_str().unwrap()]);
    let (out, _) = text(&v);
    assert_eq!(v.status.code(), Some(1), "{out}");
    assert!(out.contains("BROKEN at entry 4 (turn t2 (id "), "{out}");
    assert!(out.contains("content hash mismatch"), "{out}");

    // An entry removed from the export: named.
    let mut fewer = lines.clone();
    fewer.remove(2);
    let removed = d.path().join("removed.jsonl");
    std::fs::write(&removed, fewer.join("\n")).unwrap();
    let v = mnemo(&nowhere, &["verify", "--export", removed.to_str().unwrap()]);
    let (out, _) = text(&v);
    assert_eq!(v.status.code(), Some(1), "{out}");
    assert!(out.contains("BROKEN at entry 4 (turn t2"), "{out}");
    assert!(out.contains("sequence gap"), "{out}");

    // Cut off before its head: said.
    let cut = d.path().join("cut.jsonl");
    std::fs::write(&cut, lines[..8].join("\n")).unwrap();
    let v = mnemo(&nowhere, &["verify", "--export", cut.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(1));
    assert!(text(&v).0.contains("head mismatch"), "{}", text(&v).0);

    // A backup carries the heads.
    let backup = d.path().join("backup.db");
    let (out, _) = ok(&mnemo(&store, &["backup", "create", backup.to_str().unwrap(), "--json"]));
    let info: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(info["chain_heads"][0]["hash"], head["chain_head"]["hash"], "{info}");
}
