//! The tantivy index's IVF path, forced with a tiny `ann_min_vectors`: recall of the dense
//! search against the exact scan, removed ids never coming back (before and after a reopen),
//! the IVF persisting in the vector log (restored, not retrained), and the settings' checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_contract::conformance::index::{doc, ns, query};
use mnemo_contract::{Index, MemoryId, SearchMode, SimClock, Timestamp};
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};
use mnemo_store::vector::AnnKind;

const DIMS: usize = 32;
const CLUSTERS: u64 = 24;

fn clock() -> Arc<SimClock> {
    Arc::new(SimClock::new(Timestamp::from_millis(1_000_000)))
}

/// Deterministic pseudo-random numbers in -0.5..0.5.
fn noise(seed: u64, n: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

fn unit(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

/// Vector `i`: its cluster's centre plus noise (clustered, as real embeddings are).
fn vector(i: u64) -> Vec<f32> {
    let centre = noise(1_000_000 + i % CLUSTERS, DIMS);
    let jitter = noise(i, DIMS);
    unit(centre.iter().zip(&jitter).map(|(c, j)| c + 0.6 * j).collect())
}

fn settings() -> TantivySettings {
    TantivySettings { ann_min_vectors: 200, ivf_lists: 16, ivf_nprobe: 4, ..Default::default() }
}

async fn fill(idx: &TantivyIndex, n: i64) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let docs = chunk.iter().map(|&i| doc(i, "a", &format!("memory {i}"), Some(vector(i as u64)))).collect();
        idx.upsert(docs).await.unwrap();
    }
}

/// Mean share of the exact top `k` that the dense search returns, over `queries` queries.
async fn recall(idx: &TantivyIndex, k: usize, queries: u64) -> f64 {
    let mut sum = 0.0;
    for q in 0..queries {
        let e = vector(50_000 + q);
        let got = idx.search(&query("a", "", Some(e.clone()), SearchMode::Dense, k)).await.unwrap();
        let exact = idx.dense_exact(&ns("a"), &e, k).unwrap();
        assert_eq!(exact.len(), k);
        sum += exact.iter().filter(|x| got.iter().any(|g| g.id == x.id)).count() as f64 / k as f64;
    }
    sum / queries as f64
}

async fn removed_never_return(idx: &TantivyIndex, removed: &[MemoryId]) {
    for q in 0..40 {
        let e = vector(q);
        for mode in [SearchMode::Dense, SearchMode::Hybrid] {
            let hits = idx.search(&query("a", "memory", Some(e.clone()), mode, 200)).await.unwrap();
            assert!(!hits.is_empty());
            assert!(hits.iter().all(|h| !removed.contains(&h.id)), "a removed id came back ({mode:?}, query {q})");
        }
    }
}

#[tokio::test]
async fn ivf_recall_removals_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let removed: Vec<MemoryId> = (0..1200).step_by(3).map(MemoryId).collect();
    let before;
    {
        let idx = TantivyIndex::open(dir.path(), settings(), c.clone()).unwrap();
        idx.clear().await.unwrap();
        fill(&idx, 150).await;
        assert_eq!(idx.dense_ivf_lists(&ns("a")).unwrap(), None, "below ann_min_vectors: exact");
        fill(&idx, 1200).await;
        // The IVF trains in the background; wait for it here.
        idx.finish_dense_training().unwrap();
        assert_eq!(idx.dense_ivf_lists(&ns("a")).unwrap(), Some(16), "trained at the threshold");
        let r = recall(&idx, 10, 60).await;
        assert!(r >= 0.9, "recall@10 vs exact {r}");
        // Removals (and a replaced vector) leave the lists at once.
        idx.remove(&ns("a"), &removed).await.unwrap();
        idx.upsert(vec![doc(1, "a", "memory one", Some(vector(7)))]).await.unwrap();
        removed_never_return(&idx, &removed).await;
        assert!(recall(&idx, 10, 60).await >= 0.9);
        // A write may have started another training (the namespace grew 4x since the last
        // one): let it land first, so `before` is what gets persisted.
        idx.finish_dense_training().unwrap();
        before = idx.search(&query("a", "", Some(vector(3)), SearchMode::Dense, 20)).await.unwrap();
        idx.set_watermark(9).await.unwrap();
        idx.flush().await.unwrap();
    }
    // Reopen: the IVF comes back from the vector log as it was (same lists, same answers).
    let idx = TantivyIndex::open(dir.path(), settings(), c.clone()).unwrap();
    assert_eq!(idx.vector_count().unwrap(), 800);
    assert_eq!(idx.dense_ivf_lists(&ns("a")).unwrap(), Some(16));
    let after = idx.search(&query("a", "", Some(vector(3)), SearchMode::Dense, 20)).await.unwrap();
    assert_eq!(before, after, "the restored IVF answers as before the reopen");
    removed_never_return(&idx, &removed).await;
    drop(idx);

    // The same log opened with ann = "exact": exact answers, no IVF.
    let exact = TantivySettings { ann: AnnKind::Exact, ..settings() };
    let idx = TantivyIndex::open(dir.path(), exact, c).unwrap();
    assert_eq!(idx.dense_ivf_lists(&ns("a")).unwrap(), None);
    let e = vector(11);
    let got = idx.search(&query("a", "", Some(e.clone()), SearchMode::Dense, 30)).await.unwrap();
    let want = idx.dense_exact(&ns("a"), &e, 30).unwrap();
    assert_eq!(got.iter().map(|h| h.id).collect::<Vec<_>>(), want.iter().map(|h| h.id).collect::<Vec<_>>());
}

#[tokio::test]
async fn shrinking_below_half_the_threshold_goes_back_to_exact() {
    let idx = TantivyIndex::in_memory(settings(), clock()).unwrap();
    fill(&idx, 300).await;
    idx.finish_dense_training().unwrap();
    assert!(idx.dense_ivf_lists(&ns("a")).unwrap().is_some());
    let gone: Vec<MemoryId> = (0..201).map(MemoryId).collect();
    idx.remove(&ns("a"), &gone).await.unwrap();
    assert_eq!(idx.dense_ivf_lists(&ns("a")).unwrap(), None, "99 < 200 / 2: exact again");
    assert!((recall(&idx, 10, 10).await - 1.0).abs() < 1e-9);
}

#[test]
fn ann_settings_are_checked_and_unknown_keys_refused() {
    let s: TantivySettings = toml::from_str("ann = \"exact\"\nann_min_vectors = 500\nivf_nprobe = 8").unwrap();
    assert_eq!((s.ann, s.ann_min_vectors, s.ivf_nprobe, s.ivf_lists), (AnnKind::Exact, 500, 8, 0));
    assert!(toml::from_str::<TantivySettings>("ann = \"hnsw\"").is_err());
    assert!(toml::from_str::<TantivySettings>("ivf_probes = 3").is_err());
    let bad = TantivySettings { ivf_nprobe: 0, ..Default::default() };
    let e = TantivyIndex::in_memory(bad, clock()).err().unwrap().to_string();
    assert!(e.contains("ivf_nprobe"), "{e}");
    let bad = TantivySettings { ann_min_vectors: 1, ..Default::default() };
    assert!(bad.validate().unwrap_err().to_string().contains("ann_min_vectors"));
}

/// Rewrite the committed vector log of the index in `dir` in the earlier format (`MNVEC1`, no
/// checksums, every vector as f32, op 1), and point the commit payload at it.
fn downgrade_vector_log(dir: &std::path::Path, vectors: &[(i64, Vec<f32>)]) {
    let meta_path = dir.join("tantivy").join("meta.json");
    let mut meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    let mut payload: serde_json::Value = serde_json::from_str(meta["payload"].as_str().unwrap()).unwrap();
    let generation = payload["vectors_generation"].as_u64().unwrap();
    let mut bytes = b"MNVEC1\n\0".to_vec();
    for (id, v) in vectors {
        bytes.push(1);
        bytes.extend_from_slice(&id.to_le_bytes());
        bytes.push(1);
        bytes.extend_from_slice(b"a");
        bytes.extend_from_slice(&(v.len() as u32).to_le_bytes());
        for x in v {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(dir.join(format!("vectors-{generation}.log")), &bytes).unwrap();
    payload["vectors_len"] = serde_json::json!(bytes.len());
    meta["payload"] = serde_json::Value::String(payload.to_string());
    std::fs::write(&meta_path, serde_json::to_string(&meta).unwrap()).unwrap();
}

#[tokio::test]
async fn an_index_whose_vector_log_is_of_the_earlier_format_is_stale_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let vectors: Vec<(i64, Vec<f32>)> = (0..100).map(|i| (i, vector(i as u64))).collect();
    let before;
    {
        let idx = TantivyIndex::open(dir.path(), settings(), c.clone()).unwrap();
        idx.clear().await.unwrap();
        fill(&idx, 100).await;
        before = idx.search(&query("a", "", Some(vector(7)), SearchMode::Dense, 10)).await.unwrap();
        idx.set_watermark(3).await.unwrap();
        idx.flush().await.unwrap();
    }
    downgrade_vector_log(dir.path(), &vectors);
    {
        let idx = TantivyIndex::open(dir.path(), settings(), c.clone()).unwrap();
        match idx.state().await.unwrap() {
            mnemo_contract::IndexState::Stale(why) => {
                assert!(why.contains("vectors-") && why.contains("earlier format"), "{why}")
            }
            other => panic!("an MNVEC1 log must not be read: {other:?}"),
        }
        // What the engine does with a stale index: clear it and fill it from the store.
        idx.clear().await.unwrap();
        fill(&idx, 100).await;
        idx.set_watermark(4).await.unwrap();
        idx.flush().await.unwrap();
    }
    let idx = TantivyIndex::open(dir.path(), settings(), c).unwrap();
    assert_eq!(idx.state().await.unwrap(), mnemo_contract::IndexState::UpTo(4), "rebuilt in the current format");
    assert_eq!(idx.vector_count().unwrap(), 100);
    let again = idx.search(&query("a", "", Some(vector(7)), SearchMode::Dense, 10)).await.unwrap();
    assert_eq!(before, again);
}
