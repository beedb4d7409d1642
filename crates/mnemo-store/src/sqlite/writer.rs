//! The write connection. A write runs on the calling thread, under the connection's Mutex, in
//! `blocking` (a multi-threaded executor is told this worker blocks and moves its other tasks
//! on). One connection behind one Mutex means writes are serialised in the process (no
//! SQLITE_BUSY between our own writes) and revs are assigned in commit order.
//!
//! Why not a writer thread of its own (as before stop 30): sending it each write and waking the
//! caller with the answer cost two thread wake-ups a write, 50–90 µs on the team's 2-core VM:
//! a third of a one-at-a-time write (bench/RESULTS.md, stop 30).
//!
//! A write is never cut half-way by its caller going away: the job runs to its commit inside
//! one poll of the caller's future (a future dropped before that poll never starts it).
//!
//! What it costs elsewhere: on a current-thread runtime a write (with a wait of up to the busy
//! timeout for another process's write lock) holds the runtime's one thread, as every store
//! read already did; the engine and the `mnemo` binary run a multi-threaded runtime. There,
//! each write waiting for the connection holds a thread (the engine lets one write per
//! process through at a time), and waiters are not served in arrival order.
use std::sync::{Arc, Mutex};

use mnemo_contract::CoreError;
use rusqlite::Connection;

use crate::error::StoreError;

/// The write connection; dropping it closes the connection (checkpointing the WAL) off the
/// executor.
pub(crate) struct Writer {
    /// Shared with the readers only for an in-memory store; a file store's writer is its sole
    /// user. None only while being dropped.
    conn: Option<Arc<Mutex<Connection>>>,
}

impl Writer {
    /// Writes through `conn`.
    pub(crate) fn new(conn: Arc<Mutex<Connection>>) -> Writer {
        Writer { conn: Some(conn) }
    }

    /// Run `f` on the write connection, after the writes already under way in this process.
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T, CoreError>
    where
        F: FnOnce(&mut Connection) -> Result<T, CoreError>,
    {
        let conn = self.conn.as_ref().ok_or(StoreError::WriterGone)?;
        crate::blocking::blocking(|| {
            // Poisoned: a panic while the connection was held (a write; or a read, in memory,
            // where both share it). A write's transaction was rolled back when the panic
            // dropped it, but nothing more is written through it.
            let mut guard = conn.lock().map_err(|_| StoreError::WriterGone)?;
            f(&mut guard)
        })
    }

    /// Run `f` on the write connection if no write holds it now (None: one does).
    pub(crate) fn try_run<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, CoreError>,
    ) -> Option<Result<T, CoreError>> {
        let conn = self.conn.as_ref()?;
        crate::blocking::blocking(|| match conn.try_lock() {
            Ok(mut guard) => Some(f(&mut guard)),
            Err(std::sync::TryLockError::WouldBlock) => None,
            Err(std::sync::TryLockError::Poisoned(_)) => Some(Err(StoreError::WriterGone.into())),
        })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // The store closes its read connection first, so this is the last connection open on
        // the file, whose close checkpoints the WAL (up to a second on a large store): it must
        // not stall an executor's other tasks when the store is dropped in async code. The
        // file can be reopened as soon as this returns.
        if let Some(conn) = self.conn.take() {
            crate::blocking::blocking(move || drop(conn));
        }
    }
}
