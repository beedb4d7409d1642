//! Several `mnemo` processes, each with its own data directory, share one PostgreSQL schema
//! and state contradicting values for one claim at the same moment: reconciliation is
//! serialised per namespace across the processes, so exactly one value stays active and every
//! other is tombstoned as superseded. (Without the namespace writer lock each process plans
//! against the same state and all of them insert an active value.)
//!
//! The server: `MNEMO_POSTGRES_URL`, else one started with `scripts/pg-test-server`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;

mod cli_run;
mod common;
use cli_run::command;
use common::{postgres_index_keys, url, write_config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_processes_leave_exactly_one_active_value() {
    let url = url();
    let schema = format!("conc_{}", std::process::id());
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("postgres.toml");
    write_config(&config, &url, &schema, &postgres_index_keys(&url, &schema));
    let writers = 6;
    let rounds = 3;
    for round in 0..rounds {
        let children: Vec<_> = (0..writers)
            .map(|w| {
                command(&tmp.path().join(format!("server-{w}")))
                    .arg("--config")
                    .arg(&config)
                    .args(["--namespace", "acme", "remember"])
                    .arg(format!("[SEM] IC-MC-44 from S-208 | lead time | {} days", 10 + round * writers + w))
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "a writer failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let rows = client
        .query(
            &format!(
                "SELECT status, superseded_by FROM \"{schema}\".memories \
                 WHERE claim_entity_norm = 'ic-mc-44 from s-208' AND claim_attribute_norm = 'lead time'"
            ),
            &[],
        )
        .await
        .unwrap();
    let active = rows.iter().filter(|r| r.get::<_, String>(0) == "active").count();
    let superseded =
        rows.iter().filter(|r| r.get::<_, String>(0) == "tombstoned" && r.get::<_, Option<i64>>(1).is_some()).count();
    assert_eq!(rows.len(), writers * rounds, "every writer's value was recorded: {} rows", rows.len());
    assert_eq!(active, 1, "exactly one value must stay active, found {active} of {} rows", rows.len());
    assert_eq!(superseded, rows.len() - 1, "every other value is tombstoned as superseded");
    client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.unwrap();
}
