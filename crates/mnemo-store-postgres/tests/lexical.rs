//! The lexical side on PostgreSQL: candidates come from the postings table, bounded per
//! term; scores in one namespace never depend on another namespace's content; a rewritten or
//! removed document leaves no posting that matches it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use mnemo_contract::conformance::index::{doc, ns, query};
use mnemo_contract::{Hit, Index, IndexDoc, MemoryId, SearchMode};
use mnemo_store_postgres::index::{IndexSettings, POSTINGS_PER_TERM};
use mnemo_store_postgres::PostgresIndex;

fn settings(schema: &str) -> IndexSettings {
    IndexSettings { schema: schema.to_string(), pool_size: 2, ..IndexSettings::new(&common::url()) }
}

fn pairs(hits: &[Hit]) -> Vec<(i64, f32)> {
    hits.iter().map(|h| (h.id.0, h.score)).collect()
}

async fn postings(schema: &str, namespace: &str) -> i64 {
    let c = common::client().await;
    c.query_one(&format!("SELECT count(*) FROM \"{schema}\".index_terms WHERE namespace = $1"), &[&namespace])
        .await
        .unwrap()
        .get(0)
}

/// #8: a tenant's lexical ranking and scores are the same whatever other tenants hold.
#[tokio::test]
async fn lexical_scores_do_not_depend_on_other_namespaces() {
    let schema = common::unique_schema("lexns");
    let idx = PostgresIndex::new(&settings(&schema)).unwrap();
    idx.clear().await.unwrap();
    let texts = ["amber falcon river", "amber amber stone", "falcon over the river", "quiet stone garden"];
    let a: Vec<IndexDoc> = texts.iter().enumerate().map(|(i, t)| doc(i as i64 + 1, "a", t, None)).collect();
    idx.upsert(a).await.unwrap();
    let q = query("a", "amber falcon river stone", None, SearchMode::Lexical, 10);
    let before = idx.search(&q).await.unwrap();
    assert_eq!(before.len(), 4, "{before:?}");
    // Another tenant full of the same words, and of other ones.
    let b: Vec<IndexDoc> = (0..1500)
        .map(|i| {
            doc(10_000 + i, "b", if i % 2 == 0 { "amber amber amber falcon" } else { "river unrelated words" }, None)
        })
        .collect();
    idx.upsert(b).await.unwrap();
    let after = idx.search(&q).await.unwrap();
    assert_eq!(pairs(&before), pairs(&after), "namespace a's scores moved with namespace b's content");
    common::drop_schemas(&schema).await;
}

/// A term matching more documents than the per-term bound neither fails nor hides a document
/// matching a rarer term of the query (the rare term's postings are all candidates).
#[tokio::test]
async fn a_common_term_does_not_hide_a_rare_match() {
    let schema = common::unique_schema("lexcommon");
    let idx = PostgresIndex::new(&settings(&schema)).unwrap();
    idx.clear().await.unwrap();
    let n = POSTINGS_PER_TERM + 300;
    // The rare document is the oldest: the common term's newest postings do not include it.
    let mut docs = vec![doc(1, "a", "common saffron", None)];
    docs.extend((2..n + 2).map(|i| doc(i, "a", "common filler", None)));
    idx.upsert(docs).await.unwrap();
    let hits = idx.search(&query("a", "common saffron", None, SearchMode::Lexical, 5)).await.unwrap();
    assert_eq!(hits.first().map(|h| h.id), Some(MemoryId(1)), "{hits:?}");
    assert_eq!(hits.len(), 5);
    let hits = idx.search(&query("a", "common", None, SearchMode::Lexical, 64)).await.unwrap();
    assert_eq!(hits.len(), 64, "a common term still fills the limit");
    common::drop_schemas(&schema).await;
}

/// Postings follow the documents: a rewrite replaces them, an older replay does not touch
/// them, a removal deletes them.
#[tokio::test]
async fn rewritten_and_removed_documents_leave_no_stale_postings() {
    let schema = common::unique_schema("lexstale");
    let idx = PostgresIndex::new(&settings(&schema)).unwrap();
    idx.clear().await.unwrap();
    let mut v1 = doc(1, "a", "alpha beta", None);
    v1.rev = 1;
    let mut v2 = doc(1, "a", "gamma", None);
    v2.rev = 2;
    idx.upsert(vec![v1.clone(), doc(2, "a", "beta delta", None)]).await.unwrap();
    assert_eq!(postings(&schema, "a").await, 4);
    idx.upsert(vec![v2]).await.unwrap();
    let lex = |t: &str| query("a", t, None, SearchMode::Lexical, 5);
    let ids = |h: Vec<Hit>| h.iter().map(|x| x.id.0).collect::<Vec<_>>();
    assert!(idx.search(&lex("alpha")).await.unwrap().is_empty(), "the old text no longer matches");
    assert_eq!(ids(idx.search(&lex("gamma beta")).await.unwrap()).len(), 2);
    assert_eq!(postings(&schema, "a").await, 3, "gamma + beta delta");
    // An older replay changes nothing.
    idx.upsert(vec![v1]).await.unwrap();
    assert_eq!(postings(&schema, "a").await, 3);
    assert!(idx.search(&lex("alpha")).await.unwrap().is_empty());
    idx.remove(&ns("a"), &[MemoryId(1), MemoryId(2)]).await.unwrap();
    assert_eq!(postings(&schema, "a").await, 0, "a removal deletes the postings");
    assert!(idx.search(&lex("gamma beta delta")).await.unwrap().is_empty());
    common::drop_schemas(&schema).await;
}

/// The ranking read from the postings alone is `ts_rank`'s: each hit's score is the one
/// `ts_rank` gives its document (normalised by the best, within float rounding), and the hits
/// are the documents `ts_rank` ranks first.
#[tokio::test]
async fn postings_rank_documents_as_ts_rank_does() {
    let schema = common::unique_schema("lexrank");
    let idx = PostgresIndex::new(&settings(&schema)).unwrap();
    idx.clear().await.unwrap();
    let words = ["amber", "falcon", "river", "stone", "garden"];
    let docs: Vec<IndexDoc> = (0..60i64)
        .map(|i| {
            let mut text = Vec::new();
            for (w, word) in words.iter().enumerate() {
                for _ in 0..((i as usize * (w + 1) + w) % 4) {
                    text.push(*word);
                }
                text.push("filler");
            }
            doc(i + 1, "a", &text.join(" "), None)
        })
        .collect();
    idx.upsert(docs).await.unwrap();
    let c = common::client().await;
    for text in ["amber falcon", "river stone garden amber", "garden", "falcon unknownword"] {
        let hits = idx.search(&query("a", text, None, SearchMode::Lexical, 12)).await.unwrap();
        assert!(!hits.is_empty(), "{text}");
        let want: Vec<(i64, f32)> = c
            .query(
                &format!(
                    "WITH q AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS q \
                     FROM unnest(to_tsvector('english', $1))) \
                     SELECT d.id, ts_rank(d.tsv, q.q) FROM \"{schema}\".index_docs d, q \
                     WHERE d.namespace = 'a' AND d.tsv @@ q.q ORDER BY 2 DESC, d.id DESC"
                ),
                &[&text],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let best = want[0].1;
        let expected = |id: i64| want.iter().find(|w| w.0 == id).map(|w| w.1 / best);
        for h in &hits {
            let e = expected(h.id.0).unwrap_or_else(|| panic!("{text}: hit {} does not match", h.id.0));
            assert!((h.score - e).abs() < 1e-5, "{text}: doc {} scored {} where ts_rank gives {e}", h.id.0, h.score);
        }
        // The hits are ts_rank's first ones: the lowest hit scores at least what every
        // document left out does (up to rounding).
        let lowest = hits.iter().map(|h| h.score).fold(f32::INFINITY, f32::min);
        let hit_ids: Vec<i64> = hits.iter().map(|h| h.id.0).collect();
        for (id, r) in &want {
            if !hit_ids.contains(id) {
                assert!(r / best <= lowest + 1e-5, "{text}: doc {id} ({}) left out above {lowest}", r / best);
            }
        }
        assert_eq!(hits.len(), want.len().min(12), "{text}");
    }
    common::drop_schemas(&schema).await;
}
