//! No cross-tenant signal through lexical scores: namespace B's hits and scores are identical
//! whether or not namespace A holds B's query words — committed or still in the overlay, in
//! every Index backend of this crate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_contract::conformance::index::{axis, doc, query};
use mnemo_contract::{Hit, Index, SearchMode, SimClock, Timestamp};
use mnemo_store::brute::BruteForceIndex;
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};

fn clock() -> Arc<SimClock> {
    Arc::new(SimClock::new(Timestamp::from_millis(1_000_000)))
}

/// B's memories (ids 1..=4), then A's (ids 10..=14): with or without the word "hunter2".
async fn fill(idx: &dyn Index, a_holds_word: bool, flush_between: bool) {
    let b = vec![
        doc(1, "b", "the owner password is hunter2 for the vault", Some(axis(0, 1, 0.1))),
        doc(2, "b", "the owner of the vault is Ana", Some(axis(1, 2, 0.1))),
        doc(3, "b", "lunch at the harbour with Bob", Some(axis(2, 3, 0.1))),
        doc(4, "b", "hunter2 hunter2 rotation every month", Some(axis(3, 4, 0.1))),
    ];
    idx.upsert(b).await.unwrap();
    if flush_between {
        idx.flush().await.unwrap();
    }
    let word = if a_holds_word { "hunter2" } else { "zebra" };
    let a: Vec<_> = (10..15)
        .map(|i| doc(i, "a", &format!("tenant a note {i} {word} {word} owner"), Some(axis(i as usize, 0, 0.2))))
        .collect();
    idx.upsert(a).await.unwrap();
}

async fn b_hits(idx: &dyn Index) -> Vec<Vec<Hit>> {
    let mut out = Vec::new();
    for mode in [SearchMode::Lexical, SearchMode::Hybrid] {
        for text in ["owner hunter2", "hunter2", "vault owner", "zebra"] {
            let e = if mode == SearchMode::Lexical { None } else { Some(axis(0, 1, 0.3)) };
            out.push(idx.search(&query("b", text, e, mode, 10)).await.unwrap());
        }
    }
    out
}

async fn check(make: impl Fn(usize) -> Arc<dyn Index>, backend: &str) {
    for (flush_between, flush_after) in [(false, false), (true, false), (true, true), (false, true)] {
        let with = make(0);
        let without = make(1);
        fill(with.as_ref(), true, flush_between).await;
        fill(without.as_ref(), false, flush_between).await;
        if flush_after {
            with.flush().await.unwrap();
            without.flush().await.unwrap();
        }
        let (w, wo) = (b_hits(with.as_ref()).await, b_hits(without.as_ref()).await);
        assert!(!w[0].is_empty(), "{backend}: B finds its own words");
        assert_eq!(
            w, wo,
            "{backend} (flush between {flush_between}, after {flush_after}): B's hits and scores move with A's content"
        );
    }
}

#[tokio::test]
async fn brute_force_scores_are_namespace_local() {
    check(|_| Arc::new(BruteForceIndex::new()) as Arc<dyn Index>, "brute").await;
}

#[tokio::test]
async fn tantivy_in_ram_scores_are_namespace_local() {
    check(
        |_| Arc::new(TantivyIndex::in_memory(TantivySettings::default(), clock()).unwrap()) as Arc<dyn Index>,
        "tantivy ram",
    )
    .await;
}

#[tokio::test]
async fn tantivy_on_disk_scores_are_namespace_local() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let n = std::sync::atomic::AtomicUsize::new(0);
    check(
        move |slot| {
            let k = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Arc::new(
                TantivyIndex::open(&root.join(format!("i{k}-{slot}")), TantivySettings::default(), clock()).unwrap(),
            ) as Arc<dyn Index>
        },
        "tantivy disk",
    )
    .await;
}
