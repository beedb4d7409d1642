//! The dense side alone (`bench scale --dense-only`): N vectors in one namespace of an
//! [`AnnVectors`] with the configured `[index]` ANN settings, no store and no tantivy, to
//! measure what the IVF buys and costs: insert rate and each insert's latency (trainings run in
//! the background meanwhile), the time of one training at N, search latency against the full
//! scan of the int8 codes, and recall against the exact `f32` scan (the truth, built after
//! the index's peak RSS is taken).
//! `--uniform` swaps the topic-structured corpus vectors for uniformly random unit vectors,
//! the worst case for IVF (no cluster structure at all).
use std::time::Instant;

use mnemo_contract::{MemoryId, Namespace};
use mnemo_store::vector::{AnnSettings, AnnVectors, VectorIndex};

use super::synth::{Corpus, Rng};
use super::{Row, ScaleArgs};
use crate::error::Result;
use crate::util::{bar, peak_rss_mib, percentile, reset_peak_rss};

/// The dense-side rows of N vectors.
pub(super) fn dense_only(args: &ScaleArgs, n: usize, corpus: &Corpus, settings: &AnnSettings) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut push = |metric, value, unit, note: &str| rows.push(Row { n, metric, value, unit, note: note.to_string() });
    let rss_reset = reset_peak_rss();
    let ns = Namespace::new("dense")?;
    let kind = if args.uniform { "uniform random" } else { "topic-structured corpus" };
    let memory_vec = |i: usize| {
        if args.uniform {
            uniform(i as u64, args.dims)
        } else {
            corpus.embed(&corpus.memory_text(i as u64))
        }
    };
    let query_vec = |q: usize| {
        if args.uniform {
            uniform(q as u64 | (1 << 62), args.dims)
        } else {
            corpus.embed(&corpus.query_text(q as u64))
        }
    };

    let pb = bar(n as u64, &format!("vectors {n}"), args.quiet);
    let mut ann = AnnVectors::new(settings.clone());
    let mut secs = 0.0;
    // Each insert's own time: a training under the write path shows as one insert taking
    // seconds; trainings now run in the background, so none should.
    let mut insert_ms = Vec::with_capacity(n);
    for i in 0..n {
        let v = memory_vec(i);
        let t0 = Instant::now();
        ann.upsert(&ns, MemoryId(i as i64), &v)?;
        let dt = t0.elapsed().as_secs_f64();
        secs += dt;
        insert_ms.push(dt * 1000.0);
        if i % 10_000 == 0 {
            pb.set_position(i as u64);
        }
    }
    pb.finish_and_clear();
    let trainings = ann.trainings_started();
    let t0 = Instant::now();
    // Also waits for the retraining of an IVF outgrown while its training ran.
    ann.finish_training();
    let tail = t0.elapsed().as_secs_f64();
    let lists = ann.ivf_lists(&ns);
    push(
        "dense_insert",
        n as f64 / secs,
        "vectors/s",
        &format!("{kind} vectors, one namespace, {trainings} background trainings started meanwhile ({secs:.1}s; then {tail:.1}s waiting for the last training)"),
    );
    insert_ms.sort_by(f64::total_cmp);
    let note = format!("one insert's time, over {n} inserts across {trainings} trainings");
    push("dense_insert_p99", percentile(&insert_ms, 99.0), "ms", &note);
    push("dense_insert_p999", percentile(&insert_ms, 99.9), "ms", &note);
    push("dense_insert_max", insert_ms.last().copied().unwrap_or(0.0), "ms", &note);
    drop(insert_ms);
    if lists.is_some() {
        let t0 = Instant::now();
        ann.retrain(&ns);
        push(
            "ivf_train",
            t0.elapsed().as_secs_f64(),
            "s",
            "one training at n, in the background (waited for): k-means on a sample + filing every vector + calibration",
        );
    }
    let lists = ann.ivf_lists(&ns);
    let sizes = match ann.ivf_list_sizes(&ns) {
        Some(mut s) => {
            s.sort_unstable();
            format!(
                "IVF (as the searches below use it: after the training at n); rows per list: median {}, largest {}",
                s[s.len() / 2],
                s[s.len() - 1]
            )
        }
        None => "exact (below ann_min_vectors, or ann = exact)".to_string(),
    };
    push("dense_ivf_lists", lists.unwrap_or(0) as f64, "lists", &sizes);
    if let Some(p) = ann.ivf_nprobe(&ns) {
        push("dense_ivf_nprobe", p as f64, "lists", "lists a search scans: calibrated on the namespace's own vectors to ivf_recall_target (recall@10 vs the full scan of the codes), at least ivf_nprobe");
    }
    // The index's memory, before the benchmark's own f32 copy (the truth) is made.
    let (mib, note) = peak_rss_mib(rss_reset);
    push("peak_rss", mib, "MiB", &format!("{note}; the index alone (int8 codes), before the f32 truth is built"));

    // The truth: the exact f32 scan of the same vectors.
    let d = args.dims;
    let mut truth = Vec::with_capacity(n * d);
    for i in 0..n {
        truth.extend(memory_vec(i));
    }
    let queries: Vec<Vec<f32>> = (0..args.queries).map(query_vec).collect();
    for k in [10usize, 128] {
        let (mut ann_ms, mut code_ms, mut f32_ms, mut recall, mut code_recall) =
            (Vec::new(), Vec::new(), Vec::new(), 0.0, 0.0);
        for q in &queries {
            let t0 = Instant::now();
            let got = ann.search(&ns, q, k)?;
            ann_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
            let t0 = Instant::now();
            let full = ann.search_exact(&ns, q, k)?;
            code_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
            let t0 = Instant::now();
            let exact = f32_top(&truth, d, q, k);
            f32_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
            recall += overlap(&got, &exact);
            code_recall += overlap(&full, &exact);
        }
        ann_ms.sort_by(f64::total_cmp);
        code_ms.sort_by(f64::total_cmp);
        f32_ms.sort_by(f64::total_cmp);
        let note = format!("{kind}, {} queries, k = {k}", queries.len());
        let nq = queries.len().max(1) as f64;
        let (p50, p99, ex, f, rec, crec) = if k == 10 {
            (
                "dense_search_p50",
                "dense_search_p99",
                "dense_code_scan_p50",
                "dense_f32_scan_p50",
                "dense_recall_at_10_vs_exact",
                "dense_code_scan_recall_at_10",
            )
        } else {
            (
                "dense_search_k128_p50",
                "dense_search_k128_p99",
                "dense_code_scan_k128_p50",
                "dense_f32_scan_k128_p50",
                "dense_recall_at_128_vs_exact",
                "dense_code_scan_recall_at_128",
            )
        };
        push(p50, percentile(&ann_ms, 50.0), "ms", &note);
        push(p99, percentile(&ann_ms, 99.0), "ms", &note);
        push(ex, percentile(&code_ms, 50.0), "ms", &format!("{note}; every int8 code scanned"));
        push(f, percentile(&f32_ms, 50.0), "ms", &format!("{note}; the f32 truth, one thread, no index"));
        push(rec, recall / nq, "fraction", &format!("{note}; the index's search vs the exact f32 scan"));
        push(crec, code_recall / nq, "fraction", &format!("{note}; every code scanned vs the exact f32 scan"));
    }
    Ok(rows)
}

/// The exact `k` nearest rows of `data` (rows of `d`) to `q` by the f32 dot product.
fn f32_top(data: &[f32], d: usize, q: &[f32], k: usize) -> Vec<(MemoryId, f32)> {
    let mut scored: Vec<(MemoryId, f32)> =
        data.chunks_exact(d).enumerate().map(|(i, v)| (MemoryId(i as i64), mnemo_store::vector::dot(v, q))).collect();
    let k = k.min(scored.len());
    if k == 0 {
        return vec![];
    }
    scored.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
    scored.truncate(k);
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

/// Share of `exact`'s ids that `got` holds (1 when `exact` is empty).
pub(super) fn overlap<T>(got: &[(MemoryId, T)], exact: &[(MemoryId, T)]) -> f64 {
    if exact.is_empty() {
        return 1.0;
    }
    let hit = exact.iter().filter(|e| got.iter().any(|g| g.0 == e.0)).count();
    hit as f64 / exact.len() as f64
}

/// A uniformly random unit vector (a normal vector, normalised), seeded by `i`.
fn uniform(i: u64, dims: usize) -> Vec<f32> {
    let mut rng = Rng::new(i.wrapping_mul(0x2545_F491_4F6C_DD1D));
    let v: Vec<f32> = (0..dims).map(|_| rng.normalish()).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.into_iter().map(|x| x / norm).collect()
}
