//! WAL checkpoints off the write path. SQLite's automatic checkpoint runs inside the commit
//! that crosses its threshold: that write then copies the WAL's pages into the database and
//! fsyncs both files (with `synchronous = NORMAL`, the only fsyncs there are), so every few
//! hundred small writes, and after every large batch, one write waits for it. Here the write
//! connection's WAL hook only signals, and a thread of its own, on its own connection, runs a
//! PASSIVE checkpoint (it never blocks the writer or the readers; what it cannot copy yet is
//! copied by the next one).
//!
//! Durability does not change: a commit is in the WAL before `apply` returns, whether or not
//! a checkpoint has copied it yet; a kill at any point leaves the WAL that SQLite recovers at
//! the next open. Only the WAL file's size does: it grows while a checkpoint is behind.
use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::wal::CheckpointMode;
use rusqlite::Connection;

use crate::error::StoreError;
use crate::sqlite::connection;

/// Pages in the WAL at which a checkpoint is asked for (SQLite's automatic default).
pub(crate) const CHECKPOINT_PAGES: i32 = 1_000;

/// The checkpoint thread; dropping it waits for the thread, which ends once the write
/// connection (which holds the signalling end) is closed.
pub(crate) struct Checkpointer {
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Start the thread on a connection of its own to `path`, and make `writer`'s commits
    /// signal it instead of checkpointing themselves.
    pub(crate) fn start(path: &Path, writer: &mut Connection) -> Result<Checkpointer, StoreError> {
        let conn = connection::open_checkpointer(path)?;
        let (signal, wake) = mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("mnemo-sqlite-checkpoint".to_string())
            .spawn(move || {
                // Ends when the write connection, and with it the hook holding `signal`, is gone.
                while wake.recv().is_ok() {
                    if let Err(e) = conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
                        // The next signal tries again; the WAL only grows meanwhile.
                        tracing::debug!(error = %e, "WAL checkpoint did not run");
                    }
                }
            })
            .map_err(StoreError::Spawn)?;
        writer.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
            if pages >= CHECKPOINT_PAGES {
                // Full: a checkpoint is already asked for.
                let _ = signal.try_send(());
            }
            Ok(())
        }))?;
        Ok(Checkpointer { thread: Some(thread) })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            crate::blocking::blocking(|| {
                let _ = t.join();
            });
        }
    }
}
