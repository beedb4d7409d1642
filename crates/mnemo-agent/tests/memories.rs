//! list / export / restore over the wired runtime (SQLite + tantivy + fake model).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_contract::time::DAY_MS;
use mnemo_contract::*;
use mnemo_core::engine::{restored_from, RecallOptions};

async fn runtime(dir: &std::path::Path) -> (Runtime, Arc<SimClock>) {
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let rt = Runtime::build(&Config::embedded_default().unwrap(), dir, clock.clone(), vec![]).await.unwrap();
    (rt, clock)
}

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

async fn remember(rt: &Runtime, ns: &Namespace, text: &str) -> MemoryId {
    rt.remember(ns, "user", text.as_bytes()).await.unwrap().outcomes[0].memory.unwrap()
}

#[tokio::test]
async fn list_pages_by_id_and_hides_tombstones_unless_asked() {
    let d = tempfile::tempdir().unwrap();
    let (rt, _) = runtime(d.path()).await;
    let a = ns("a");
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(remember(&rt, &a, &format!("[SEM] Item{i} | colour | red")).await);
    }
    remember(&rt, &ns("b"), "[SEM] Other | colour | blue").await;
    rt.engine().forget(&a, "user", &ForgetCommand::parse_arg("Item1 | colour").unwrap()).await.unwrap();

    let p1 = rt.list(&a, &ListPage { after: None, limit: 2, include_tombstoned: false }).await.unwrap();
    assert_eq!(p1.memories.iter().map(|m| m.id).collect::<Vec<_>>(), vec![ids[0], ids[2]]);
    assert_eq!(p1.next_after, Some(ids[2]));
    let p2 = rt.list(&a, &ListPage { after: p1.next_after, limit: 2, include_tombstoned: false }).await.unwrap();
    assert_eq!(p2.memories.iter().map(|m| m.id).collect::<Vec<_>>(), vec![ids[3], ids[4]]);
    let all = rt.list(&a, &ListPage { after: None, limit: 10, include_tombstoned: true }).await.unwrap();
    assert_eq!(all.memories.len(), 5);
    assert_eq!(all.next_after, None, "a short page is the last");
    assert!(!all.memories[1].status.is_active());
    assert!(all.memories.iter().all(|m| m.namespace == a), "another namespace never shows");

    let e = rt.list(&a, &ListPage { after: None, limit: 0, include_tombstoned: false }).await.unwrap_err();
    assert!(e.to_string().contains("1 to 1000"), "{e}");
}

#[tokio::test]
async fn export_writes_one_json_memory_per_line_without_vectors() {
    let d = tempfile::tempdir().unwrap();
    let (rt, _) = runtime(d.path()).await;
    let a = ns("a");
    for i in 0..3 {
        remember(&rt, &a, &format!("[SEM] Item{i} | colour | red")).await;
    }
    let mut lines = Vec::new();
    let n = rt
        .export(&a, true, &mut |l: &str| {
            lines.push(l.to_string());
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(n, 3);
    assert_eq!(lines.len(), 3);
    for l in &lines {
        assert!(!l.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v.get("embedding").is_none(), "no vector in {l}");
        assert_eq!(v["embedding_model"].as_str().unwrap(), rt.engine().embedder_model());
        assert_eq!(v["status"], "active");
        assert!(l.len() < 1500, "a memory line is small without its vector: {} bytes", l.len());
    }
}

#[tokio::test]
async fn restore_makes_a_new_active_memory_and_keeps_the_tombstone() {
    let d = tempfile::tempdir().unwrap();
    let (rt, clock) = runtime(d.path()).await;
    let a = ns("a");
    let old = remember(&rt, &a, "[SEM] Acme | owner | Ben").await;
    clock.advance(DAY_MS);
    rt.engine().forget(&a, "user", &ForgetCommand::parse_arg("Acme | owner").unwrap()).await.unwrap();
    let pack = rt.engine().recall(&a, "Acme owner", &RecallOptions::default()).await.unwrap();
    assert!(pack.items.is_empty(), "forgotten");

    let r = rt.restore(&a, old).await.unwrap();
    assert_eq!(r.from, old);
    assert_ne!(r.restored.id, old, "a tombstone is never reactivated");
    assert!(r.restored.status.is_active());
    assert_eq!(r.restored.provenance.model, restored_from(old));
    assert_eq!(r.restored.content, "Acme | owner | Ben");
    let back = rt.engine().memories(&a, &[old]).await.unwrap();
    assert!(!back[0].status.is_active(), "the old memory stays tombstoned");
    let pack = rt.engine().recall(&a, "Acme owner", &RecallOptions::default()).await.unwrap();
    assert_eq!(pack.items[0].memory.id, r.restored.id, "the restored memory is recallable");

    // Restoring it again: an active memory already holds the value.
    let e = rt.restore(&a, old).await.unwrap_err().to_string();
    assert!(e.contains("already holds"), "{e}");
    // Restoring an active memory is refused.
    let e = rt.restore(&a, r.restored.id).await.unwrap_err().to_string();
    assert!(e.contains("is active"), "{e}");
    // Another namespace cannot see it.
    let e = rt.restore(&ns("b"), old).await.unwrap_err().to_string();
    assert!(e.contains("not found") || e.contains("memory"), "{e}");
}

#[tokio::test]
async fn restoring_a_superseded_value_supersedes_the_current_one() {
    let d = tempfile::tempdir().unwrap();
    let (rt, clock) = runtime(d.path()).await;
    let a = ns("a");
    let email = remember(&rt, &a, "[SEM] Ben | channel | email").await;
    clock.advance(DAY_MS);
    let phone = remember(&rt, &a, "[SEM] Ben | channel | phone").await;
    clock.advance(DAY_MS);
    let r = rt.restore(&a, email).await.unwrap();
    assert_eq!(r.superseded, vec![phone]);
    let active = rt.engine().active_memories(&a).await.unwrap();
    assert_eq!(active.iter().map(|m| m.id).collect::<Vec<_>>(), vec![r.restored.id], "one current value");
    let why = rt.engine().why(&a, phone).await.unwrap();
    assert_eq!(why.superseded_by.map(|m| m.id), Some(r.restored.id));
}
