//! Backups of the SQLite store, and replacing its content with one.
//!
//! - A backup is SQLite's online backup API into a new file beside the destination, all pages
//!   in one step (one read transaction: a consistent snapshot, taken while the store keeps
//!   serving — WAL readers do not block the writer — and from a read-only store too), fsynced
//!   and renamed into place: never a half-written file under the final name, never an
//!   overwritten one.
//! - A restore checks the backup (a Mnemo store, not newer than this build, SQLite
//!   `quick_check` clean), copies it into a staging file beside the store (migrated to this
//!   build's schema), moves the staging copy's generation above both the store's and the
//!   backup's, then copies it over the live store with SQLite's online backup API in one step:
//!   one write transaction, so a crash leaves the old content or the new, never a mix.
use std::path::{Path, PathBuf};

use mnemo_contract::{BackupInfo, CoreError, StoreIdentity};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::Connection;

use super::check::{self, Check};
use super::{connection, read, Synchronous};
use crate::error::{DbResult, StoreError};

type Result<T> = std::result::Result<T, CoreError>;

/// 20 ms waits for a busy store during a restore (10 s in all).
const BUSY_WAITS: u32 = 500;

fn invalid(msg: String) -> CoreError {
    CoreError::InvalidInput(msg)
}

/// Copy the whole database behind `from` into a new file at `to`, in one step (one read
/// transaction on `from`, one write transaction on `to`).
/// The copy is left in rollback-journal mode: a single self-contained file (no -wal/-shm beside
/// it); opening it for writing switches it back to WAL.
fn copy_db(from: &Connection, to: &Path) -> Result<Connection> {
    let mut dest = Connection::open(to).db()?;
    {
        let copy = Backup::new(from, &mut dest).db()?;
        run_in_one_step(&copy)?;
    }
    dest.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get::<_, String>(0)).db()?;
    Ok(dest)
}

/// Run a backup to completion with all pages in one step. Busy only while another process
/// holds a lock on the destination (a restore holds the data directory's lock, so nobody
/// should): waited for a bounded time.
fn run_in_one_step(copy: &Backup<'_, '_>) -> Result<()> {
    let mut waits = 0;
    loop {
        match copy.step(-1).db()? {
            StepResult::Done => return Ok(()),
            StepResult::Busy | StepResult::Locked if waits < BUSY_WAITS => {
                waits += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            StepResult::Busy | StepResult::Locked => {
                return Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                    Some("another connection kept the database busy for 10 s during a backup copy".into()),
                ))
                .into())
            }
            _ => continue,
        }
    }
}

/// `path` with `suffix` appended to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// Remove a SQLite file and its -wal/-shm companions (missing ones are fine).
fn remove_db_files(path: &Path) {
    for p in [path.to_path_buf(), beside(path, "-wal"), beside(path, "-shm"), beside(path, "-journal")] {
        let _ = std::fs::remove_file(p);
    }
}

fn file_err<'a>(path: &'a Path, action: &'static str) -> impl FnOnce(std::io::Error) -> CoreError + 'a {
    move |source| StoreError::BackupFile { path: path.to_path_buf(), action, source }.into()
}

/// Flush `path` (a file or a directory) to disk.
fn fsync(path: &Path) -> Result<()> {
    std::fs::File::open(path).and_then(|f| f.sync_all()).map_err(file_err(path, "flush to disk"))
}

fn counts(conn: &Connection) -> Result<(u64, u64)> {
    let n = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).db().map(|v| v.max(0) as u64);
    Ok((n("SELECT count(*) FROM memories")?, n("SELECT count(*) FROM turns")?))
}

/// What the database behind `conn` holds, as a backup of `bytes` bytes at `path`.
fn info(conn: &Connection, path: &Path, bytes: u64, identity: Option<StoreIdentity>) -> Result<BackupInfo> {
    let (memories, turns) = counts(conn)?;
    let chain_heads = super::chain::heads(conn)?;
    Ok(BackupInfo { path: path.to_path_buf(), bytes, identity, memories, turns, chain_heads })
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Write a snapshot of the database behind `conn` (a read connection) to `dest`.
pub(crate) fn backup_to(conn: &Connection, dest: &Path) -> Result<BackupInfo> {
    if dest.exists() {
        return Err(invalid(format!("{}: already exists; a backup never overwrites a file", dest.display())));
    }
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            return Err(invalid(format!("{}: no such directory for the backup", parent.display())));
        }
    }
    let partial = beside(dest, ".partial");
    remove_db_files(&partial);
    let written = copy_db(conn, &partial).and_then(|copy| {
        let identity = read::identity(&copy).ok();
        // The copy is complete (and self-contained) once the backup step is done.
        let info = info(&copy, dest, file_len(&partial), identity)?;
        copy.close().map_err(|(_, e)| e).db()?;
        fsync(&partial)?;
        Ok(info)
    });
    let info = match written {
        Ok(i) => i,
        Err(e) => {
            remove_db_files(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, dest).map_err(file_err(dest, "move the finished backup into place"))?;
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        fsync(parent)?;
    }
    Ok(info)
}

/// Check the backup at `src` and stage a copy of it at `staging`, migrated to this build's
/// schema; returns the staged copy's write connection.
pub(crate) fn stage(src: &Path, staging: &Path) -> Result<Connection> {
    if !src.is_file() {
        return Err(invalid(format!("{}: no such backup file", src.display())));
    }
    let backup = connection::open_read_only(src)?;
    check::quick_check(&backup, src)?;
    remove_db_files(staging);
    let staged = copy_db(&backup, staging).and_then(|copy| {
        drop(copy);
        // Opening it for writing migrates an older backup to this build's schema.
        connection::open_writer(staging, Synchronous::Normal, Check::Off).map(|(c, _)| c).map_err(CoreError::from)
    });
    staged.inspect_err(|_| remove_db_files(staging))
}

/// Replace the content of the live store behind `live` (the writer's connection) with the
/// staged copy, whose generation is first moved above both the live store's and its own.
pub(crate) fn replace(live: &mut Connection, staged: Connection, staging: &Path, src: &Path) -> Result<BackupInfo> {
    let result = (|| {
        let ours = read::identity(live)?;
        let theirs = read::identity(&staged)?;
        let generation = ours.generation.max(theirs.generation) + 1;
        staged.execute("UPDATE store_meta SET value = ?1 WHERE key = 'generation'", [generation.to_string()]).db()?;
        super::ids::carry_high_water(live, &staged)?;
        {
            let copy = Backup::new(&staged, live).db()?;
            // All pages in one step: one write transaction on the live store.
            run_in_one_step(&copy)?;
        }
        let identity = read::identity(live)?;
        info(live, src, file_len(src), Some(identity))
    })();
    drop(staged);
    remove_db_files(staging);
    result
}

/// Where a restore stages its copy: beside the store file, or in the temp directory for a
/// store in memory.
pub(crate) fn staging_path(store: Option<&Path>) -> PathBuf {
    match store {
        Some(p) => beside(p, ".restore-staging"),
        None => std::env::temp_dir().join(format!("mnemo-restore-staging-{}.db", std::process::id())),
    }
}
