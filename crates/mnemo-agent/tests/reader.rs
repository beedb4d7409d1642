//! A reader that keeps no lock (`Runtime::build_reader`, what an embedded read-only Engine
//! opens): a writer (`mnemo serve`) starts beside it at any time, and it refuses every write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;
use std::time::Duration;

use mnemo_agent::error::ErrorKind;
use mnemo_agent::{Config, Runtime};
use mnemo_contract::*;
// The built-in kinds the embedded default names (the agent library links none).
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;

fn clock() -> Arc<SimClock> {
    Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()))
}

fn ns() -> Namespace {
    Namespace::new("t").unwrap()
}

/// The data directory's lock is free: taken at once, then released.
async fn lock_is_free(dir: &std::path::Path) -> bool {
    mnemo_agent::lock::lock_data_dir(dir, Duration::ZERO).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_with_no_writer_present_keeps_no_lock_and_a_writer_starts_beside_it() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("new");
    let config = Config::embedded_default().unwrap();
    // A new directory: the reader prepares the store, then lets the lock go.
    let reader = Runtime::build_reader(&config, &dir, clock(), vec![]).await.unwrap();
    assert!(lock_is_free(&dir).await, "the reader holds the data directory's lock");
    let e = reader.remember(&ns(), "user", b"[SEM] Acme | owner | Ben").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ReadOnly, "a reader refuses to write: {e}");

    // A writer opens beside it (no wait: the lock is free) and writes; the reader sees it.
    let writer = Runtime::build(&config, &dir, clock(), vec![]).await.unwrap();
    assert!(!lock_is_free(&dir).await, "the writer holds the lock");
    writer.remember(&ns(), "user", b"[SEM] Acme | owner | Ben").await.unwrap();
    let seen = reader.engine().all_memories(&ns()).await.unwrap();
    assert_eq!(seen.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["Acme | owner | Ben"]);
    // Its recall catches up with what the writer wrote after it opened.
    let pack = reader.engine().recall(&ns(), "who owns Acme", &Default::default()).await.unwrap();
    assert!(pack.items.iter().any(|i| i.memory.content == "Acme | owner | Ben"), "{pack:?}");
    writer.remember(&ns(), "user", b"[SEM] Acme | owner | Carl").await.unwrap();
    writer.engine().flush_index().await.unwrap();
    let pack = reader.engine().recall(&ns(), "who owns Acme", &Default::default()).await.unwrap();
    let found: Vec<&str> = pack.items.iter().map(|i| i.memory.content.as_str()).collect();
    assert!(found.contains(&"Acme | owner | Carl") && !found.contains(&"Acme | owner | Ben"), "{found:?}");
    drop(writer);
    assert!(lock_is_free(&dir).await, "the writer let the lock go, and the reader took nothing");
    drop(reader);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_opened_on_written_memory_recalls_it_and_a_reader_beside_a_writer_waits_for_nothing() {
    let d = tempfile::tempdir().unwrap();
    let config = Config::embedded_default().unwrap();
    let writer = Runtime::build(&config, d.path(), clock(), vec![]).await.unwrap();
    writer.remember(&ns(), "user", b"[SEM] Acme | owner | Ben").await.unwrap();
    writer.engine().flush_index().await.unwrap();
    // Beside the writer: at once, no lock taken.
    let beside = Runtime::build_reader(&config, d.path(), clock(), vec![]).await.unwrap();
    drop(writer);
    assert!(lock_is_free(d.path()).await, "the reader beside the writer took the lock when it went");
    drop(beside);
    // With no writer present: prepared, then read without the lock.
    let reader = Runtime::build_reader(&config, d.path(), clock(), vec![]).await.unwrap();
    assert!(lock_is_free(d.path()).await);
    let pack = reader.engine().recall(&ns(), "who owns Acme", &Default::default()).await.unwrap();
    assert!(pack.items.iter().any(|i| i.memory.content == "Acme | owner | Ben"), "{pack:?}");
}
