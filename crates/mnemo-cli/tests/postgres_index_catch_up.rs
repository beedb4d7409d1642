//! Several Mnemo servers on one PostgreSQL store, each with an index of its own (tantivy, in
//! RAM or in its data directory): a server's index must never answer from what it last saw.
//! This process plays server B (an engine on the shared store with an in-memory index); a
//! `mnemo remember` child process plays server A and contradicts a value B has indexed. B's
//! next recall, with no write of its own in between, must bring its index up to the store
//! first and pack only the new value.
//!
//! The server: `MNEMO_POSTGRES_URL`, else one started with `scripts/pg-test-server`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds: linked here (the library links none), so their registrations are kept.
use mnemo_llm as _;
use mnemo_store as _;

use std::process::Stdio;
use std::sync::Arc;

use mnemo_contract::*;
use mnemo_core::engine::{EngineParts, RecallOptions};
use mnemo_core::Engine;
use mnemo_llm::{FakeQwen, LlmReasoner};
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};
use mnemo_store_postgres::{PgSettings, PostgresStore};

mod cli_run;
mod common;
use cli_run::command;
use common::{url, write_config};

fn server_b(url: &str, schema: &str) -> Engine {
    let fake = Arc::new(FakeQwen::new(64).unwrap());
    let clock: Arc<dyn Clock> = Arc::new(SimClock::new(Timestamp(1_780_000_000_000)));
    let mut pg = PgSettings::new(url);
    pg.schema = schema.to_string();
    pg.pool_size = 4;
    Engine::new(EngineParts {
        store: Arc::new(PostgresStore::new(&pg).unwrap()),
        index: Arc::new(TantivyIndex::in_memory(TantivySettings::default(), clock.clone()).unwrap()),
        embedder: fake.clone(),
        reasoner: Arc::new(LlmReasoner::new(fake)),
        clock,
        tokens: Arc::new(CharTokenCounter),
        policy: EnginePolicy::default(),
    })
    .unwrap()
}

fn packed(pack: &mnemo_contract::Pack) -> Vec<String> {
    pack.items.iter().map(|i| i.memory.content.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_its_own_index_recalls_another_servers_correction() {
    let url = url();
    let schema = format!("catchup_{}", std::process::id());
    let ns = Namespace::new("acme").unwrap();
    let b = server_b(&url, &schema);
    b.remember(&ns, "user", "[SEM] Ben | phone | 555-0100").await.unwrap();
    let before = b.recall(&ns, "Ben phone", &RecallOptions::default()).await.unwrap();
    assert!(packed(&before).iter().any(|c| c.contains("555-0100")), "B recalls its own value: {:?}", packed(&before));

    // Server A: another process, its own data directory and tantivy index, the same store.
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("postgres-tantivy.toml");
    write_config(&config, &url, &schema, "kind = \"tantivy\"\npath = \"index\"\n");
    let out = command(&tmp.path().join("server-a"))
        .arg("--config")
        .arg(&config)
        .args(["--namespace", "acme", "remember"])
        .arg("[SEM] Ben | phone | 555-0199")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "server A failed: {}", String::from_utf8_lossy(&out.stderr));

    // B has written nothing since: only the catch-up before its search can tell it.
    let after = b.recall(&ns, "Ben phone", &RecallOptions::default()).await.unwrap();
    let contents = packed(&after);
    assert!(contents.iter().any(|c| c.contains("555-0199")), "B recalls A's new value: {contents:?}");
    assert!(!contents.iter().any(|c| c.contains("555-0100")), "B never recalls the superseded value: {contents:?}");
    let active = b.active_memories(&ns).await.unwrap();
    assert_eq!(active.len(), 1, "one active value in the store: {active:?}");

    drop(b);
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.unwrap();
}
