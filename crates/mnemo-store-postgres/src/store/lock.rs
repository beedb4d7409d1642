//! The cross-process writer lock of a namespace: a session-level advisory lock held on a
//! pooled connection for as long as the guard lives (the engine holds it from planning a turn
//! to applying it). Its key differs from the per-batch transaction lock, so the holder's own
//! batches (on other connections) do not wait for it.
use deadpool_postgres::Object;
use mnemo_contract::{CoreError, Namespace, NamespaceGuard};

use crate::db::Db;
use crate::error::DbContext;

/// Releases the lock when dropped.
struct WriterLock {
    client: Option<Object>,
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else { return };
        match tokio::runtime::Handle::try_current() {
            // Unlock and give the connection back to the pool.
            Ok(rt) => {
                rt.spawn(async move {
                    if client.batch_execute("SELECT pg_advisory_unlock_all()").await.is_err() {
                        drop(Object::take(client));
                    }
                });
            }
            // No runtime to unlock on: close the connection, which releases its locks.
            Err(_) => drop(Object::take(client)),
        }
    }
}

/// Wait for and take the writer lock of `ns`.
pub(crate) async fn lock(db: &Db, ns: &Namespace) -> Result<NamespaceGuard, CoreError> {
    let client = db.client().await?;
    let key = format!("{}:writer", db.schema());
    client
        .execute("SELECT pg_advisory_lock(hashtext($1), hashtext($2))", &[&key, &ns.as_str()])
        .await
        .db("take the namespace writer lock")?;
    Ok(Box::new(WriterLock { client: Some(client) }))
}
