//! The errors of mnemo-store's SQLite backend, mapped into [`CoreError`] at the trait boundary.
use std::path::PathBuf;

use mnemo_contract::{CoreError, StoreErrorKind};
use thiserror::Error;

/// What can go wrong inside the SQLite store (validation errors of a write batch are
/// `CoreError::InvalidInput` / `NotFound` directly: they are the caller's to fix).
#[derive(Debug, Error)]
pub enum StoreError {
    /// SQLite itself failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The file at the path exists but is not a SQLite database.
    #[error("{path}: not a SQLite database ({detail})")]
    NotADatabase {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
    },
    /// The file is shorter than its own header says, or empty: cut off (an interrupted copy, a
    /// `: > file`, a full disk). Never opened as a new, empty store.
    #[error(
        "{path}: the store file is truncated: {detail}; restore it from a backup, or remove it \
         (and its -wal/-shm files) to start a new, empty store"
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// What was found.
        detail: String,
    },
    /// SQLite's `quick_check` or `integrity_check` found damage the store cannot repair by
    /// itself (a table's b-tree, not only an index): the store is not written on.
    #[error(
        "{path}: the store file is damaged (SQLite {check}: {problems}); it is not written on. Fix: restore \
         the store from a backup with `mnemo backup restore BACKUP` (README \"Backups\"; the restore does \
         not need the damaged content), or stop Mnemo and copy a backup over this file"
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// Which check found it.
        check: &'static str,
        /// What the check reported (the first few problems).
        problems: String,
    },
    /// SQLite reported the file damaged while it was in use ("database disk image is
    /// malformed"): the operation failed, nothing of it was written, and a marker beside the
    /// file makes the next open check it in full (and rebuild a damaged index).
    #[error(
        "{path}: SQLite found the store file damaged while using it ({detail}); nothing of this operation \
         was written. Fix: run `mnemo verify --repair` (it rebuilds damaged SQLite indexes; the next \
         command that opens the store does the same), and if it reports a damaged table, restore the store \
         from a backup with `mnemo backup restore BACKUP`"
    )]
    DamageSeen {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
    },
    /// The file is a SQLite database, but not one of Mnemo's.
    #[error("{path}: a SQLite database but not a Mnemo store ({detail})")]
    Foreign {
        /// The file.
        path: PathBuf,
        /// Why it was refused.
        detail: String,
    },
    /// The schema was written by a newer build of Mnemo.
    #[error(
        "{path}: schema version {found} is newer than this build of Mnemo knows (up to {known}); \
         upgrade Mnemo to open it"
    )]
    FutureSchema {
        /// The file.
        path: PathBuf,
        /// `PRAGMA user_version` found.
        found: i64,
        /// The newest version this code knows.
        known: i64,
    },
    /// A migration step failed.
    #[error("{path}: migration to schema version {version} failed: {source}")]
    Migration {
        /// The file.
        path: PathBuf,
        /// The version being applied.
        version: i64,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The parent directory could not be created.
    #[error("cannot create directory {path}: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A stored row cannot be decoded (the database was edited or damaged).
    #[error("corrupt {table} row {id}: {detail}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// The row's id.
        id: i64,
        /// What is wrong.
        detail: String,
    },
    /// The store was opened read-only (its file or directory cannot be written): reads work,
    /// this write does not.
    #[error(
        "{path}: the store is read-only (its file or directory cannot be written: {why}); reads work, \
         writes need write access"
    )]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// Why it was opened read-only.
        why: String,
    },
    /// The write connection is unusable: a panic while it was held, or the store is closing.
    #[error("the store's write connection is unusable (a panic while it was in use, or the store is closing)")]
    WriterGone,
    /// A read running on a blocking thread did not finish (it panicked or the runtime is
    /// shutting down).
    #[error("a store read on a blocking thread failed: {0}")]
    ReadTask(String),
    /// A backup file could not be written, read or moved into place.
    #[error("{path}: cannot {action}: {source}")]
    BackupFile {
        /// The file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// A connection mutex was poisoned by a panic on another thread.
    #[error("a store connection lock was poisoned by an earlier panic")]
    Poisoned,
}

impl StoreError {
    /// What kind of failure this is, for callers matching on it.
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            StoreError::Sqlite(e) | StoreError::Migration { source: e, .. } => sqlite_kind(e),
            StoreError::NotADatabase { .. } | StoreError::Foreign { .. } => StoreErrorKind::Foreign,
            StoreError::Truncated { .. }
            | StoreError::Damaged { .. }
            | StoreError::DamageSeen { .. }
            | StoreError::Corrupt { .. } => StoreErrorKind::Damaged,
            StoreError::FutureSchema { .. } => StoreErrorKind::Newer,
            StoreError::CreateDir { source, .. } | StoreError::BackupFile { source, .. } => io_kind(source),
            StoreError::ReadOnly { .. } => StoreErrorKind::ReadOnly,
            StoreError::WriterGone | StoreError::ReadTask(_) | StoreError::Poisoned => StoreErrorKind::Other,
        }
    }
}

/// SQLite's result code as a kind.
fn sqlite_kind(e: &rusqlite::Error) -> StoreErrorKind {
    use rusqlite::ErrorCode;
    // The shared-memory file cannot be grown: in practice a full disk (SQLITE_IOERR_SHMSIZE).
    if let rusqlite::Error::SqliteFailure(f, _) = e {
        if f.extended_code == rusqlite::ffi::SQLITE_IOERR_SHMSIZE {
            return StoreErrorKind::Full;
        }
    }
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreErrorKind::Busy,
        Some(ErrorCode::ReadOnly) => StoreErrorKind::ReadOnly,
        Some(ErrorCode::DiskFull) => StoreErrorKind::Full,
        Some(ErrorCode::DatabaseCorrupt) => StoreErrorKind::Damaged,
        Some(ErrorCode::NotADatabase) => StoreErrorKind::Foreign,
        Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => StoreErrorKind::Unavailable,
        _ => StoreErrorKind::Other,
    }
}

/// An OS error as a kind.
fn io_kind(e: &std::io::Error) -> StoreErrorKind {
    match e.kind() {
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => StoreErrorKind::ReadOnly,
        std::io::ErrorKind::StorageFull => StoreErrorKind::Full,
        _ => StoreErrorKind::Unavailable,
    }
}

impl From<StoreError> for CoreError {
    fn from(e: StoreError) -> Self {
        CoreError::store(e.kind(), e)
    }
}

/// `.db()?` turns a rusqlite result into a `CoreError::StoreFailure` result (the orphan rule forbids a
/// direct `From<rusqlite::Error> for CoreError`).
pub(crate) trait DbResult<T> {
    /// Map the SQLite error into the store's error.
    fn db(self) -> Result<T, CoreError>;
}

impl<T> DbResult<T> for Result<T, rusqlite::Error> {
    fn db(self) -> Result<T, CoreError> {
        self.map_err(|e| StoreError::Sqlite(e).into())
    }
}
