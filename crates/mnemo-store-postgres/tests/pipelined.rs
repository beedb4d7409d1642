//! A pipelined read sends `BEGIN` and the scope, the statement and `COMMIT` together: after a
//! failing statement the connection must go back to the pool outside any transaction, and the
//! namespace a read was scoped to must not outlive it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use mnemo_contract::Namespace;
use mnemo_store_postgres::db::Scope;
use mnemo_store_postgres::{Db, PgSettings};

#[tokio::test]
async fn a_failed_read_leaves_the_connection_clean_and_unscoped() {
    // The reads run one after another: the one connection the pool opens serves them all.
    let settings = PgSettings { pool_size: 2, ..common::throwaway("pipe") };
    let db = Db::connect(&settings).unwrap();
    let ns = Namespace::new("acme").unwrap();
    let scoped =
        db.pipelined(Scope::Namespace(&ns), "", "SELECT current_setting('mnemo.namespace', true)", &[]).await.unwrap();
    assert_eq!(scoped[0].get::<_, String>(0), "acme", "the statement runs inside the scoped transaction");

    let err = db.pipelined(Scope::Namespace(&ns), "", "SELECT 1 / (random() * 0)::int", &[]).await.unwrap_err();
    assert!(err.to_string().contains("division by zero"), "the statement's error is reported: {err}");

    let client = db.client().await.unwrap();
    // One simple-query message: outside a transaction block, the statement starts its own
    // transaction, so now() (the transaction's start) is the statement's start.
    let rows = client
        .simple_query(
            "SELECT (now() = statement_timestamp())::text, COALESCE(current_setting('mnemo.namespace', true), '')",
        )
        .await
        .expect("the connection is not left in an aborted transaction");
    let row = rows
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        })
        .unwrap();
    assert_eq!(row.get(0), Some("true"), "the connection is not left inside an open transaction");
    assert_eq!(row.get(1), Some(""), "the namespace setting ended with its transaction");
    drop(client);

    let again = db
        .pipelined(
            Scope::All,
            " SET LOCAL statement_timeout = '5s';",
            "SELECT current_setting('statement_timeout')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(again[0].get::<_, String>(0), "5s", "settings apply to the pipelined statement");
}
