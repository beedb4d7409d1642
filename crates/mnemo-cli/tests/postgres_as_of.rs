//! Time on PostgreSQL (issue 38): `recall --as-of`, `recall --valid-at` and `history` answer from
//! a PostgreSQL store as from SQLite (crates/mnemo-cli/tests/as_of.rs, world_time.rs), with the PostgreSQL index (an as-of recall
//! ranks in the exact in-memory index with its fusion weights) and with tantivy beside it.
//!
//! The server: `MNEMO_POSTGRES_URL`, else one started with `scripts/pg-test-server`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod cli_run;
mod common;
use cli_run::{command, contents, stdout_json};
use common::{url, write_config};

/// `mnemo --data-dir DIR --config CONFIG --namespace acme ARGS…`.
fn mnemo(config: &Path, dir: &Path, args: &[&str]) -> Output {
    command(dir).arg("--config").arg(config).args(["--namespace", "acme"]).args(args).output().unwrap()
}

fn json(config: &Path, dir: &Path, args: &[&str]) -> Value {
    stdout_json(&mnemo(config, dir, args), args)
}

async fn as_of_on(index: &str) {
    let url = url();
    let schema = format!("asof_{index}_{}", std::process::id());
    // The PostgreSQL index lives in the store's schema, beside its tables.
    let index_keys =
        if index == "postgres" { format!("url = \"{url}\"\nschema = \"{schema}\"\n") } else { String::new() };
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("pg.toml");
    write_config(&config, &url, &schema, &format!("kind = \"{index}\"\n{index_keys}"));
    let dir = tmp.path().join("data");
    for (at, text) in [
        ("2026-01-01", "[SEM] Northwind Labs | lead time | 21 days"),
        ("2026-01-21", "[SEM] Northwind Labs | lead time | 35 days"),
    ] {
        let out = mnemo(&config, &dir, &["--at", at, "remember", text]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let q = "what is the lead time of Northwind Labs";
    let then = json(&config, &dir, &["recall", q, "--as-of", "2026-01-11", "--json"]);
    assert_eq!(contents(&then), ["Northwind Labs | lead time | 21 days"], "{index}: {then}");
    let later = json(&config, &dir, &["recall", q, "--as-of", "2026-01-31", "--json"]);
    assert_eq!(contents(&later), ["Northwind Labs | lead time | 35 days"], "{index}: {later}");
    let h = json(&config, &dir, &["history", "Northwind Labs | lead time", "--json"]);
    let values: Vec<(&str, &str, Option<&str>)> = h["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["value"].as_str().unwrap(), v["recorded_at"].as_str().unwrap(), v["ended_at"].as_str()))
        .collect();
    assert_eq!(
        values,
        [("21 days", "2026-01-01T00:00:00Z", Some("2026-01-21T00:00:00Z")), ("35 days", "2026-01-21T00:00:00Z", None)],
        "{index}: {h}"
    );
    // World time: Lisbon from 2019 to 2021, replaced by Porto from 2022; what was true in 2020
    // is Lisbon, before 2019 nothing (said), after 2022 Porto.
    for (at, text) in [
        ("2026-01-22", "[SEM from=2019 to=2021] Ben | city | Lisbon"),
        ("2026-01-23", "[SEM from=2022] Ben | city | Porto"),
    ] {
        let out = mnemo(&config, &dir, &["--at", at, "remember", text]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Ben's memories only: the lead time states no interval and is, until replaced, true throughout.
    let ben = |v: &Value| -> Vec<String> { contents(v).into_iter().filter(|c| c.starts_with("Ben")).collect() };
    let city = |t: &str| json(&config, &dir, &["recall", "Ben city", "--raw", "--valid-at", t, "--json"]);
    assert_eq!(ben(&city("2020-06-01")), ["Ben | city | Lisbon"], "{index}");
    assert_eq!(ben(&city("2023-06-01")), ["Ben | city | Porto"], "{index}");
    let before = city("2018-06-01");
    assert!(ben(&before).is_empty() && before.to_string().contains("before every stated start"), "{index}: {before}");
    let h = json(&config, &dir, &["history", "Ben | city", "--json"]);
    assert_eq!(
        (&h["values"][0]["valid_from"], &h["values"][0]["valid_to"]),
        (&"2019-01-01".into(), &"2022-01-01".into()),
        "{h}"
    );
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await.unwrap();
}

// One test: the shared server is started once (two tests starting it at once would race).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_of_and_history_on_postgres_with_its_own_index_and_with_tantivy() {
    as_of_on("postgres").await;
    as_of_on("tantivy").await;
}
