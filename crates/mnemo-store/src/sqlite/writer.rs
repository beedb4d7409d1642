//! The one writer thread. It owns the write connection; async callers send it a job over a
//! std channel and await the answer on a oneshot. One writer means writes are serialised in
//! the process (no SQLITE_BUSY between our own writes) and revs are assigned in commit order.
//!
//! If a caller's future is dropped after sending, the job still runs to commit; only the
//! answer is lost.
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use mnemo_contract::CoreError;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::error::StoreError;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Handle to the writer thread; dropping it closes the channel and joins the thread.
pub(crate) struct Writer {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Start the thread. The connection sits behind a Mutex only because an in-memory store
    /// shares it with the readers; for a file store the writer is its sole user.
    pub(crate) fn spawn(conn: Arc<Mutex<Connection>>) -> Result<Writer, StoreError> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("mnemo-sqlite-writer".to_string())
            .spawn(move || {
                // Ends when every Sender is gone (the store was dropped).
                while let Ok(job) = rx.recv() {
                    match conn.lock() {
                        Ok(mut guard) => job(&mut guard),
                        // Poisoned: drop the job, so its caller gets WriterGone.
                        Err(_) => drop(job),
                    }
                }
            })
            .map_err(StoreError::Spawn)?;
        Ok(Writer { jobs: Some(jobs), thread: Some(thread) })
    }

    /// Run `f` on the writer thread and await its result.
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T, CoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, CoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            // The caller may have gone away; the write is done either way.
            let _ = reply.send(f(conn));
        });
        let jobs = self.jobs.as_ref().ok_or(StoreError::WriterGone)?;
        jobs.send(job).map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel ends the loop after the queued jobs; joining makes sure the
        // write connection is closed (WAL checkpointed) before the store is gone, so the file
        // can be reopened at once.
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            // The wait (queued writes, then a WAL checkpoint: up to a second on a large store)
            // must not stall an executor's other tasks when the store is dropped in async code.
            crate::blocking::blocking(|| {
                let _ = t.join();
            });
        }
    }
}
