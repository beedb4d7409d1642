//! Opening and configuring connections.
//!
//! Durability: the journal is WAL. With `synchronous = NORMAL` (the default) a commit has been
//! written to the WAL file (in the OS page cache) before `apply` returns, so an acknowledged
//! write survives the process being killed (SIGKILL, panic, OOM kill) — the crash-safety test
//! checks exactly this. What NORMAL does not promise is durability against power loss or an OS
//! crash: the last few commits before the WAL is fsynced may roll back (the database is never
//! corrupted). `synchronous = FULL` fsyncs the WAL on every commit and closes that gap, at the
//! cost of one fsync per write; pick it when the machine itself may die.
use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde::Deserialize;

use crate::error::StoreError;
use crate::sqlite::check::{self, Check};
use crate::sqlite::schema;

/// How long a connection waits for a lock held by another connection or process.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// SQLite's `synchronous` setting (see the module docs for what each survives).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// Survives a process crash; power loss may roll back the last commits.
    #[default]
    Normal,
    /// Also survives power loss; one fsync per commit.
    Full,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

/// Turn on SQLite's query planner stability guarantee: a statement's plan no longer depends on
/// the values bound to it. Why: without it SQLite marks a statement with `LIMIT ?` to be parsed
/// and planned anew at every binding, so `changed_since`, which every write's index sync asks,
/// was re-prepared each time: 87% of its samples in a profile of one-at-a-time writes
/// (bench/RESULTS.md, stop 30). Our statements name their indexes' columns directly and the
/// store keeps no `sqlite_stat4` figures, so no plan gains from seeing the values.
fn stable_plans(conn: &Connection) -> Result<(), StoreError> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// Turn "file is not a database" (and a damaged file) into a clear error naming the path.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => StoreError::NotADatabase { path: path.to_path_buf(), detail: e.to_string() },
        // A damaged schema page is found before any integrity check runs (the schema is read
        // first; since schema version 6 it spans more than the first page).
        Some(ErrorCode::DatabaseCorrupt) => {
            StoreError::Damaged { path: path.to_path_buf(), check: "open", problems: e.to_string() }
        }
        _ => StoreError::Sqlite(e),
    }
}

/// `classify` a SQLite error coming back as a `StoreError`.
fn unwrap_sqlite(path: &Path, e: StoreError) -> StoreError {
    match e {
        StoreError::Sqlite(e) => classify(path, e),
        other => other,
    }
}

fn open_flags() -> OpenFlags {
    // No URI parsing: the path is a path. NO_MUTEX: each connection is used by one thread at
    // a time (under the writer's or the reader's Mutex).
    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX
}

/// Open the write connection of a file store: create the parent directory, switch to WAL,
/// check the file is a Mnemo store, run the integrity check `check` asks for (see `check`:
/// damaged indexes are rebuilt, the note saying so is returned) and migrate it.
pub(crate) fn open_writer(
    path: &Path,
    sync: Synchronous,
    check: Check,
) -> Result<(Connection, Option<String>), StoreError> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)
                .map_err(|source| StoreError::CreateDir { path: parent.to_path_buf(), source })?;
        }
    }
    check_file(path)?;
    // Looked at before the open, which creates the WAL file an unclean close leaves.
    let full = check::why_full(path, check);
    let mut conn = Connection::open_with_flags(path, open_flags()).map_err(|e| classify(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    stable_plans(&conn)?;
    // Reading the header is where a garbage file is detected; refusing before the WAL switch
    // (which is persistent) leaves someone else's file untouched.
    schema::inspect(&conn, path).map_err(|e| unwrap_sqlite(path, e))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(|e| classify(path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            detail: format!("could not switch to WAL journal mode (got {mode:?})"),
        });
    }
    conn.pragma_update(None, "synchronous", sync.pragma())?;
    conn.pragma_update(None, "foreign_keys", true)?;
    // Freed cells and pages are overwritten with zeros, so an erased value's bytes do not
    // linger in the file (see `erase`).
    conn.pragma_update(None, "secure_delete", true).map_err(|e| classify(path, e))?;
    let note = match (check, full) {
        (Check::Off, _) => None,
        (_, Some(why)) => check::full_check(&conn, path, why)?,
        (_, None) => {
            check::quick_check(&conn, path)?;
            None
        }
    };
    schema::migrate(&mut conn, path).map_err(|e| unwrap_sqlite(path, e))?;
    Ok((conn, note))
}

/// SQLite's file header: the magic string, then (big-endian) the page size at 16, the change
/// counter at 24, the page count at 28 and the "version valid for" counter at 92.
const HEADER_LEN: usize = 100;
const MAGIC: &[u8] = b"SQLite format 3\0";

/// Refuse an existing store file that is empty or shorter than its header says, before SQLite
/// sees it: SQLite would take an empty file for a new database (so a `: > mnemo.db` would
/// silently start an empty store under the old index), and a cut-off file fails only later, on
/// the first read of a missing page. A missing file is fine (a new store is created).
pub(crate) fn check_file(path: &Path) -> Result<(), StoreError> {
    use std::io::Read as _;
    let truncated = |detail: String| StoreError::Truncated { path: path.to_path_buf(), detail };
    let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
    let len = meta.len();
    if len == 0 {
        return Err(truncated("it is empty (0 bytes)".into()));
    }
    let mut header = [0u8; HEADER_LEN];
    let mut file = std::fs::File::open(path)
        .map_err(|e| StoreError::Foreign { path: path.to_path_buf(), detail: format!("cannot read it: {e}") })?;
    let mut read = 0;
    while read < HEADER_LEN {
        match file.read(&mut header[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) => {
                return Err(StoreError::Foreign { path: path.to_path_buf(), detail: format!("cannot read it: {e}") })
            }
        }
    }
    if read < MAGIC.len() || &header[..MAGIC.len()] != MAGIC {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
            detail: "it does not start with the SQLite header".into(),
        });
    }
    if read < HEADER_LEN {
        return Err(truncated(format!("{len} bytes, shorter than the 100-byte SQLite header")));
    }
    let be32 = |at: usize| u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]);
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536u64,
        n => u64::from(n),
    };
    // The page count is only meaningful when the "version valid for" matches the change counter
    // (files written by very old SQLite versions leave it stale). A WAL file beside the store
    // may still hold pages a checkpoint had not finished copying, so the size is only judged
    // without one.
    let wal = path.with_file_name(format!("{}-wal", path.file_name().and_then(|n| n.to_str()).unwrap_or("")));
    let wal_pending = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    let pages = u64::from(be32(28));
    if be32(92) == be32(24) && pages > 0 && !wal_pending && len < pages.saturating_mul(page_size) {
        return Err(truncated(format!(
            "{len} bytes, but its header counts {pages} pages of {page_size} bytes ({} bytes)",
            pages.saturating_mul(page_size)
        )));
    }
    Ok(())
}

/// Prepared statements a read connection keeps.
const READER_STATEMENTS: usize = 64;

/// A read connection's page cache, KiB (SQLite's default is 2 MiB). At a million memories the
/// table's interior pages alone take about that, so with the default a recall's misses read
/// interior pages from the file again as well as the leaves they need.
const READER_CACHE_KIB: i64 = 16 * 1024;

/// Open a read connection to a file store already opened by `open_writer` (so it exists and
/// is migrated). `query_only` makes any write through it an error.
pub(crate) fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, open_flags()).map_err(|e| classify(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    stable_plans(&conn)?;
    conn.pragma_update(None, "query_only", true)?;
    // Room for every statement the reads use (each `IN (...)` read has one per padded width,
    // see `in_list`).
    conn.set_prepared_statement_cache_capacity(READER_STATEMENTS);
    conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)?;
    Ok(conn)
}

/// Whether `e`, from opening `path` for writing, means the store cannot be written (a
/// read-only file, directory or file system) rather than something wrong with it.
pub(crate) fn cannot_write(e: &StoreError, path: &Path) -> bool {
    use mnemo_contract::StoreErrorKind as K;
    let file_read_only = std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly());
    // A full disk: reads still work from a read-only open (writes fail saying the disk is full).
    matches!(e.kind(), K::ReadOnly | K::Unavailable | K::Full) || (file_read_only && matches!(e, StoreError::Sqlite(_)))
}

/// Open an existing store for reading only: no WAL switch, no migration, nothing written. A
/// WAL store whose shared-memory file cannot be created (a read-only directory) is opened
/// `immutable` — unless a WAL file holds commits not yet copied into the database, which an
/// immutable open would silently leave out: that is refused.
pub(crate) fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    check_file(path)?;
    if !path.exists() {
        return Err(StoreError::ReadOnly {
            path: path.to_path_buf(),
            why: "there is no store file, and a read-only store cannot create one".into(),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let plain = Connection::open_with_flags(path, flags).and_then(|c| {
        c.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))?;
        Ok(c)
    });
    let conn = match plain {
        Ok(c) => c,
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::NotADatabase) => return Err(classify(path, e)),
        Err(first) => {
            let wal = path.with_file_name(format!("{}-wal", path.file_name().and_then(|n| n.to_str()).unwrap_or("")));
            if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
                return Err(StoreError::ReadOnly {
                    path: path.to_path_buf(),
                    why: format!(
                        "it cannot be opened for reading ({first}) and its WAL file {} holds commits that only \
                         a writable open can read",
                        wal.display()
                    ),
                });
            }
            let uri = format!("file:{}?immutable=1", uri_path(path));
            Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI).map_err(|e| classify(path, e))?
        }
    };
    conn.busy_timeout(BUSY_TIMEOUT)?;
    stable_plans(&conn)?;
    let version = schema::inspect(&conn, path).map_err(|e| unwrap_sqlite(path, e))?;
    if version < schema::known_version() {
        return Err(StoreError::ReadOnly {
            path: path.to_path_buf(),
            why: format!(
                "its schema (version {version}) needs migrating to version {} to be read, which needs write access",
                schema::known_version()
            ),
        });
    }
    Ok(conn)
}

/// `path` percent-encoded for a `file:` URI (everything but unreserved bytes and `/`).
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(char::from(*b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One in-memory connection, shared by the writes and the readers (behind one Mutex),
/// so both see the same database; migrated like a file.
pub(crate) fn open_memory() -> Result<Connection, StoreError> {
    let mut conn = Connection::open_in_memory()?;
    stable_plans(&conn)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "secure_delete", true)?;
    schema::migrate(&mut conn, Path::new(":memory:"))?;
    Ok(conn)
}
