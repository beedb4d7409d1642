//! Integrity checks: which one runs when the store is opened for writing, what a finding means
//! and what the store repairs by itself.
//!
//! `PRAGMA quick_check` reads every page and checks each b-tree's shape, but not that an
//! index holds exactly the rows of its table: a one-byte flip inside an index page
//! (issue 42: "row 137 missing from index memories_rev") passes it, and then writes fail with
//! "database disk image is malformed". `PRAGMA integrity_check` also cross-checks every index
//! against its table. Measured at 100,000 memories (a 66 MB store, RELIABILITY.md): 0.18–0.23
//! s for `integrity_check` against 0.08–0.09 s for `quick_check` with SQLite built optimised
//! (the `sqlite3` shell; a release build of `mnemo`), several times that in a debug build, whose
//! bundled SQLite is not optimised. So:
//!
//! - a store of up to [`FULL_CHECK_MAX_BYTES`] gets the full `integrity_check` at every open
//!   for writing;
//! - a larger one gets it after an unclean close (the WAL file the last writer removes when it
//!   closes was left behind, holding writes) or after damage was seen in use (a marker file beside the store,
//!   [`damage_marker`]), and `quick_check` otherwise;
//! - `mnemo verify` runs it on demand.
//!
//! When `integrity_check` names only index problems (an index missing a row, holding a wrong
//! entry or the wrong number of them), the store rebuilds those indexes from their tables
//! (`REINDEX`), checks again and opens, with a note. Anything else (a table's b-tree) is
//! refused, naming the file and the fix.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode};

use crate::error::StoreError;

/// Stores up to this size are checked in full (`integrity_check`) at every open for writing:
/// about 100,000 memories, ~0.2 s with an optimised SQLite.
pub const FULL_CHECK_MAX_BYTES: u64 = 64 << 20;

/// How many problems a check reports at most (the first ones name the damage well enough).
const PROBLEMS: i64 = 100;

/// Which check runs when a store is opened for writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// None (`[store] quick_check = false`, or a backup restore, which replaces every page).
    Off,
    /// `integrity_check` when the store is small, was not closed cleanly or was seen damaged,
    /// else `quick_check` (see the module docs).
    Auto,
    /// `integrity_check` whatever the size (`mnemo verify --repair`).
    Full,
}

/// The file beside the store that says damage was seen while it was in use, so the next open
/// checks it in full (and removes the file once the store is sound).
pub fn damage_marker(path: &Path) -> PathBuf {
    sibling(path, "-damage-seen")
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    path.with_file_name(format!("{}{suffix}", path.file_name().and_then(|n| n.to_str()).unwrap_or("")))
}

/// Why the full check runs for the store at `path` (looked at before it is opened), or None
/// (`quick_check` is enough).
pub(crate) fn why_full(path: &Path, check: Check) -> Option<&'static str> {
    match check {
        Check::Off => None,
        Check::Full => Some("on demand"),
        Check::Auto => {
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            if damage_marker(path).exists() {
                Some("because damage was seen while the store was in use")
            } else if std::fs::metadata(sibling(path, "-wal")).is_ok_and(|m| m.len() > 0) {
                // The last connection to close removes the WAL; a read-only one leaves it
                // empty. One holding frames: a writer was killed (or is still running).
                Some("because its last writer did not close cleanly (its WAL file was left holding writes)")
            } else if size <= FULL_CHECK_MAX_BYTES {
                Some("at every open of a store up to 64 MiB")
            } else {
                None
            }
        }
    }
}

/// What `PRAGMA integrity_check` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Every problem reported (empty: the store is sound).
    pub problems: Vec<String>,
    /// The indexes named by problems that a `REINDEX` fixes.
    pub indexes: Vec<String>,
    /// The problems that are not an index's (a table's b-tree, a page): a backup is needed.
    pub other: Vec<String>,
}

impl Findings {
    /// No problem found.
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty()
    }

    /// Every problem is an index's, fixed by rebuilding it from its table.
    pub fn only_indexes(&self) -> bool {
        !self.problems.is_empty() && self.other.is_empty()
    }
}

/// Run `PRAGMA integrity_check` (or `quick_check`) and sort what it says.
pub(crate) fn findings(conn: &Connection, pragma: &str) -> rusqlite::Result<Findings> {
    let indexes = schema_indexes(conn)?;
    let mut stmt = conn.prepare(&format!("PRAGMA {pragma}({PROBLEMS})"))?;
    let lines = stmt.query_map([], |r| r.get::<_, String>(0))?;
    let mut found = Findings::default();
    let mut named = BTreeSet::new();
    for line in lines {
        let line = line?;
        if line == "ok" {
            continue;
        }
        for problem in line.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("*** ")) {
            match index_named(problem, &indexes) {
                Some(index) => {
                    named.insert(index);
                }
                None => found.other.push(problem.to_string()),
            }
            found.problems.push(problem.to_string());
        }
    }
    found.indexes = named.into_iter().collect();
    Ok(found)
}

/// The store's indexes: (name, root page).
fn schema_indexes(conn: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    let mut stmt =
        conn.prepare("SELECT name, rootpage FROM sqlite_schema WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    rows.collect()
}

/// The index a problem line is about, when `REINDEX` fixes it: SQLite's "row N missing from
/// index X", "wrong # of entries in index X", "non-unique entry in index X", and a b-tree
/// problem inside an index's tree ("Tree R page P …", R an index's root page).
fn index_named(problem: &str, indexes: &[(String, i64)]) -> Option<String> {
    for marker in [" missing from index ", "wrong # of entries in index ", "non-unique entry in index "] {
        if let Some(at) = problem.find(marker) {
            let name = problem[at + marker.len()..].trim();
            return indexes.iter().find(|(n, _)| n == name).map(|(n, _)| n.clone());
        }
    }
    let root: i64 = problem.strip_prefix("Tree ")?.split_whitespace().next()?.parse().ok()?;
    indexes.iter().find(|(_, r)| *r == root).map(|(n, _)| n.clone())
}

/// The full check of a store opened for writing (`why`: the reason it runs, for the note):
/// sound → None; index damage only → rebuilt (`REINDEX`), checked again, and the note saying
/// so; anything else → refused naming the file and the fix.
pub(crate) fn full_check(conn: &Connection, path: &Path, why: &str) -> Result<Option<String>, StoreError> {
    let fail = |e: rusqlite::Error| match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt) => {
            StoreError::Damaged { path: path.to_path_buf(), check: "integrity_check", problems: e.to_string() }
        }
        _ => StoreError::Sqlite(e),
    };
    let found = findings(conn, "integrity_check").map_err(fail)?;
    if found.is_sound() {
        clear_marker(path);
        return Ok(None);
    }
    if !found.only_indexes() {
        return Err(StoreError::Damaged {
            path: path.to_path_buf(),
            check: "integrity_check",
            problems: first(&found.problems),
        });
    }
    reindex(conn, &found.indexes).map_err(fail)?;
    let after = findings(conn, "integrity_check").map_err(fail)?;
    if !after.is_sound() {
        return Err(StoreError::Damaged {
            path: path.to_path_buf(),
            check: "integrity_check after rebuilding its damaged indexes",
            problems: first(&after.problems),
        });
    }
    clear_marker(path);
    let note = format!(
        "{}: SQLite's integrity_check (run {why}) found damaged index{} {} ({}); rebuilt from the \
         tables (REINDEX), which are intact: the store is sound again and nothing was lost",
        path.display(),
        if found.indexes.len() == 1 { "" } else { "es" },
        found.indexes.join(", "),
        first(&found.problems),
    );
    tracing::warn!("{note}");
    Ok(Some(note))
}

/// `quick_check`: a damaged b-tree is refused naming the file and the fix.
pub(crate) fn quick_check(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let damaged = |problems: String| StoreError::Damaged { path: path.to_path_buf(), check: "quick_check", problems };
    match findings(conn, "quick_check") {
        Ok(found) if found.is_sound() => Ok(()),
        Ok(found) => Err(damaged(first(&found.problems))),
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseCorrupt) => Err(damaged(e.to_string())),
        Err(e) => Err(StoreError::Sqlite(e)),
    }
}

/// Rebuild `indexes` (names read from the schema) from their tables, in one transaction.
pub(crate) fn reindex(conn: &Connection, indexes: &[String]) -> rusqlite::Result<()> {
    let mut sql = String::from("BEGIN IMMEDIATE;");
    for name in indexes {
        sql.push_str(&format!("REINDEX \"{}\";", name.replace('"', "\"\"")));
    }
    sql.push_str("COMMIT;");
    conn.execute_batch(&sql).inspect_err(|_| {
        let _ = conn.execute_batch("ROLLBACK");
    })
}

/// The first few problems, on one line.
fn first(problems: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = problems.iter().take(SHOWN).cloned().collect::<Vec<_>>().join("; ");
    if problems.len() > SHOWN {
        s.push_str(&format!("; and {} more", problems.len() - SHOWN));
    }
    s
}

/// Leave the marker of damage seen in use (best effort: the error that saw it is what the
/// caller gets either way).
pub(crate) fn mark_damage_seen(path: &Path) {
    let marker = damage_marker(path);
    if !marker.exists() {
        if let Err(e) =
            std::fs::write(&marker, b"SQLite reported this store damaged; the next open checks it in full\n")
        {
            tracing::debug!(marker = %marker.display(), error = %e, "the damage marker could not be written");
        }
    }
}

fn clear_marker(path: &Path) {
    let marker = damage_marker(path);
    if marker.exists() {
        let _ = std::fs::remove_file(&marker);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_problems_are_told_from_the_rest() {
        let idx = vec![("memories_rev".to_string(), 9), ("turns_namespace".to_string(), 4)];
        assert_eq!(index_named("row 137 missing from index memories_rev", &idx).as_deref(), Some("memories_rev"));
        assert_eq!(
            index_named("wrong # of entries in index turns_namespace", &idx).as_deref(),
            Some("turns_namespace")
        );
        assert_eq!(index_named("Tree 9 page 9 cell 3: invalid page number 77", &idx).as_deref(), Some("memories_rev"));
        assert_eq!(index_named("Tree 5 page 21 cell 0: Offset 7708 out of range 224..4092", &idx), None);
        assert_eq!(index_named("row 3 missing from index not_ours", &idx), None);
        assert_eq!(index_named("Page 40: never used", &idx), None);
    }
}
