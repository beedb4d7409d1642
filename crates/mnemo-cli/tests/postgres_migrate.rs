//! `mnemo migrate` copies a SQLite data directory into PostgreSQL with every count and
//! checksum equal, and the migrated store recalls the same packs on PostgreSQL (+ its own
//! index, rebuilt from the store) as the data directory does on SQLite + tantivy; the history
//! chain is copied with the same heads, and `mnemo verify` checks it on PostgreSQL.
//!
//! The server: `MNEMO_POSTGRES_URL`, else one started with `scripts/pg-test-server`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

mod cli_run;
mod common;
use cli_run::{command, ok_stdout};
use common::{postgres_index_keys, url, write_config};

fn mnemo(data: &Path, config: Option<&Path>, ns: &str, at: &str, args: &[&str]) -> String {
    let mut c = command(data);
    c.args(["--namespace", ns, "--at", at]);
    if let Some(cfg) = config {
        c.arg("--config").arg(cfg);
    }
    ok_stdout(&c.args(args).output().unwrap())
}

/// The packed memories of a recall: (id, content, status) in pack order.
fn pack(json: &str) -> Vec<(String, String)> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (i["memory"]["id"].as_str().unwrap().to_string(), i["memory"]["content"].as_str().unwrap().to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrated_data_dir_recalls_the_same_packs() {
    let url = url();
    let tmp = tempfile::tempdir().unwrap();
    let sqlite_dir = tmp.path().join("sqlite");
    let turns: &[(&str, &str, &str)] = &[
        ("acme", "2026-07-01T09:00:00Z", "[SEM] IC-MC-44 from S-208 | lead time | 21 days"),
        ("acme", "2026-07-01T10:00:00Z", "[PROC] Always add a 5-day buffer for S-208 orders."),
        ("acme", "2026-07-02T09:00:00Z", "[SEM] Northwind Labs | discount | 12%"),
        ("acme", "2026-07-03T09:00:00Z", "[EPI] Called S-208 about the delayed shipment of IC-MC-44."),
        ("acme", "2026-07-04T09:00:00Z", "[SEM] IC-MC-44 from S-208 | lead time | 35 days"),
        ("globex", "2026-07-01T09:00:00Z", "[SEM] Hamburg depot | stock of IC-MC-44 | 1200 units"),
        ("globex", "2026-07-05T09:00:00Z", "[SEM] Hamburg depot | stock of IC-MC-44 | 800 units"),
    ];
    for (ns, at, text) in turns {
        mnemo(&sqlite_dir, None, ns, at, &["remember", text]);
    }
    let schema = format!("migrate_{}", std::process::id());
    let report = mnemo(
        &sqlite_dir,
        None,
        "acme",
        "2026-07-06T09:00:00Z",
        &["migrate", "--from", sqlite_dir.to_str().unwrap(), "--to", &url, "--schema", &schema, "--json"],
    );
    let r: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(r["ok"], true, "{report}");
    let rows = r["namespaces"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "both namespaces copied: {report}");
    for row in rows {
        assert_eq!(row["source"], row["target"], "counts and checksum must match: {row}");
    }
    let acme = rows.iter().find(|r| r["namespace"] == "acme").unwrap();
    assert_eq!(acme["target"]["turns"], 5);
    assert_eq!(acme["target"]["tombstones"], 1, "the superseded lead time travels as a tombstone");

    let pg_config = tmp.path().join("pg.toml");
    write_config(&pg_config, &url, &schema, &postgres_index_keys(&url, &schema));
    let pg_dir = tmp.path().join("pg");
    for (ns, query) in [
        ("acme", "What is the lead time for IC-MC-44 from S-208?"),
        ("acme", "What discount does Northwind Labs get?"),
        ("acme", "S-208 orders"),
        ("globex", "How many IC-MC-44 are in stock at the Hamburg depot?"),
    ] {
        let at = "2026-07-07T09:00:00Z";
        let on_sqlite = pack(&mnemo(&sqlite_dir, None, ns, at, &["recall", query, "--raw", "--json", "--full"]));
        let on_pg = pack(&mnemo(&pg_dir, Some(&pg_config), ns, at, &["recall", query, "--raw", "--json", "--full"]));
        assert!(!on_sqlite.is_empty(), "{ns}: {query:?} recalls something");
        assert_eq!(on_pg, on_sqlite, "{ns}: {query:?}: the same pack on PostgreSQL as on SQLite");
    }
    // The history chain travels too: the same heads (compared in the report above), and
    // `mnemo verify` on the PostgreSQL store checks it.
    for row in rows {
        assert!(row["source"]["chain_head"].as_str().is_some_and(|h| h.len() == 64), "{row}");
    }
    let verified = mnemo(&pg_dir, Some(&pg_config), "acme", "2026-07-07T09:00:00Z", &["verify"]);
    assert!(
        verified.contains("history: namespace acme: ") && verified.contains("history: verified (2 namespace(s))"),
        "{verified}"
    );
    assert!(verified.contains(acme["source"]["chain_head"].as_str().unwrap()), "{verified}");
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.unwrap();
}
