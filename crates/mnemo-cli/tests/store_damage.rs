//! A damaged SQLite store on the command line (issue 42): a flipped byte in an index page that
//! `quick_check` does not see is found by `mnemo verify` and repaired by the next command
//! before it writes, with a note; `verify --repair` repairs it too; a damaged table is refused
//! naming the file and the fix, and `backup restore` brings the store back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;

mod cli_run;
use cli_run::{mnemo, ok, text};

/// A data directory of 40 memories, closed cleanly.
fn seeded(dir: &Path) {
    let turn: String = (0..40).map(|i| format!("[EPI] note number {i} about the shipment\n")).collect();
    ok(&mnemo(dir, &["remember", &turn]));
    assert!(!dir.join("mnemo.db-wal").exists());
}

/// The file offset of the first leaf page of b-tree `name` (an index or a table), and the page size.
fn leaf(db: &Path, name: &str) -> (usize, usize) {
    let raw = rusqlite::Connection::open(db).unwrap();
    let root: i64 = raw.query_row("SELECT rootpage FROM sqlite_schema WHERE name = ?1", [name], |r| r.get(0)).unwrap();
    let size: i64 = raw.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    drop(raw);
    let (size, bytes) = (size as usize, std::fs::read(db).unwrap());
    let mut page = root as usize;
    loop {
        let at = (page - 1) * size;
        match bytes[at] {
            0x0a | 0x0d => return (at, size),
            0x02 | 0x05 => page = u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize,
            t => panic!("page type {t:#x}"),
        }
    }
}

fn flip(db: &Path, offset: usize, mask: u8) {
    let mut bytes = std::fs::read(db).unwrap();
    bytes[offset] ^= mask;
    std::fs::write(db, bytes).unwrap();
}

/// Flip the id byte at the end of `memories_rev`'s leaf page: `quick_check` still passes.
fn flip_index(db: &Path) {
    let (at, size) = leaf(db, "memories_rev");
    flip(db, at + size - 1, 0x01);
    let raw = rusqlite::Connection::open(db).unwrap();
    let quick: String = raw.query_row("PRAGMA quick_check", [], |r| r.get(0)).unwrap();
    assert_eq!(quick, "ok");
}

fn memories(db: &Path) -> i64 {
    let raw = rusqlite::Connection::open(db).unwrap();
    let check: String = raw.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
    raw.query_row("SELECT count(*) FROM memories", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_flipped_index_byte_is_found_by_verify_and_repaired_before_the_next_write() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("mnemo.db");
    seeded(d.path());
    assert!(ok(&mnemo(d.path(), &["verify"])).0.contains("sound"));
    flip_index(&db);

    let v = mnemo(d.path(), &["verify"]);
    let (out, _) = text(&v);
    assert_eq!(v.status.code(), Some(1), "{out}");
    assert!(out.contains("memories_rev") && out.contains("verify --repair") && out.contains("mnemo.db"), "{out}");
    let json: serde_json::Value = serde_json::from_slice(&mnemo(d.path(), &["verify", "--json"]).stdout).unwrap();
    assert_eq!(json["sound"], false);
    assert_eq!(json["damaged_indexes"][0], "memories_rev");

    // The next command repairs the store before it writes, and says so.
    let (_, err) = ok(&mnemo(d.path(), &["remember", "[EPI] written after the repair"]));
    assert!(err.contains("REINDEX") && err.contains("memories_rev") && err.contains("mnemo.db"), "{err}");
    assert_eq!(memories(&db), 41, "every memory is there, and the new one");
    assert!(ok(&mnemo(d.path(), &["verify"])).0.contains("sound"));
    let (out, _) = ok(&mnemo(d.path(), &["recall", "written after the repair", "--raw", "--mode", "lexical"]));
    assert!(out.contains("written after the repair"), "{out}");

    // `verify --repair` does the same on demand.
    flip_index(&db);
    let (out, _) = ok(&mnemo(d.path(), &["verify", "--repair"]));
    assert!(out.contains("repaired:") && out.contains("sound"), "{out}");
    assert_eq!(memories(&db), 41);
}

#[test]
fn a_damaged_table_is_refused_naming_the_file_and_the_fix_and_a_backup_restores_it() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("mnemo.db");
    seeded(d.path());
    let backup = d.path().join("b.db");
    ok(&mnemo(d.path(), &["backup", "create", backup.to_str().unwrap()]));
    let (at, _) = leaf(&db, "memories");
    flip(&db, at + 8, 0x10);

    for args in [&["recall", "shipment"][..], &["remember", "[EPI] refused"][..], &["reindex"][..]] {
        let o = mnemo(d.path(), args);
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{args:?} is refused");
        assert!(err.contains(&db.display().to_string()) && err.contains("mnemo backup restore"), "{args:?}: {err}");
    }
    let v = mnemo(d.path(), &["verify"]);
    assert_eq!(v.status.code(), Some(1));
    assert!(text(&v).0.contains("backup restore"), "{}", text(&v).0);

    ok(&mnemo(d.path(), &["backup", "restore", backup.to_str().unwrap()]));
    assert_eq!(memories(&db), 40);
    assert!(ok(&mnemo(d.path(), &["verify"])).0.contains("sound"));
}
