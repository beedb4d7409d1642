//! Trials of ordinary use that once degraded a data directory without damaging it (issue 42):
//!
//! - churn: many single-memory `remember` processes, as a script calling the CLI makes them.
//!   Each used to leave a tantivy segment that was never merged and, now and then, a `.tmp`
//!   file; the index must stay within [`MAX_SEGMENTS`] segments with no `.tmp` file left, and
//!   every memory must be found;
//! - readers: `recall` while `reindex` rebuilds the index. A reader must never wait for the
//!   writer's lock nor build an index of its own: each recall answers within [`READER_BOUND`].
use std::path::Path;
use std::time::{Duration, Instant};

use super::world::{files_under, World, T0, T1};
use super::Row;
use crate::error::{BenchError, Result};

/// The most segments the index may hold after the churn.
pub const MAX_SEGMENTS: u64 = 10;
/// The longest a recall beside a running reindex may take.
pub const READER_BOUND: Duration = Duration::from_secs(1);

/// `n` single-memory remembers into one directory, then the checks.
pub fn churn(exe: &Path, work: &Path, n: usize, config: &[String]) -> Result<Row> {
    let w = World { exe: exe.to_path_buf(), dir: work.join("churn"), config: config.to_vec() };
    let mut failures = Vec::new();
    let mut failed_writes = 0u64;
    for i in 0..n {
        let r = w.run(T0, &["remember", &format!("[SEM] Churntok{i} | colour | shade{i}")])?;
        if !r.ok {
            failed_writes += 1;
            if failures.len() < 5 {
                failures.push(format!("remember {i} failed: {}", r.stderr.trim()));
            }
        }
    }
    let segments = segment_count(&w.dir.join("index").join("tantivy"))?;
    let tmp: Vec<_> = files_under(&w.dir.join("index"))
        .into_iter()
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.contains(".tmp")))
        .collect();
    if segments > MAX_SEGMENTS {
        failures.push(format!("{segments} segments after {n} writes (at most {MAX_SEGMENTS})"));
    }
    if let Some(f) = tmp.first() {
        failures.push(format!("{} .tmp files left, e.g. {}", tmp.len(), f.display()));
    }
    // Found by the index: a recall per 20 (a recall ranks a bounded number of candidates).
    let mut lost = 0u64;
    for chunk in (0..n).collect::<Vec<_>>().chunks(20) {
        let wanted: Vec<String> = chunk.iter().map(|i| format!("Churntok{i}")).collect();
        let found = w.recall(T1, &wanted.join(" "))?.unwrap_or_default();
        lost += super::world::missing(&wanted, &found).len() as u64;
    }
    if lost > 0 {
        failures.push(format!("{lost} of {n} memories not found by recall"));
    }
    let counts = super::counts([
        ("writes", n as u64),
        ("failed_writes", failed_writes),
        ("segments", segments),
        ("tmp_files", tmp.len() as u64),
        ("memories_not_found", lost),
    ]);
    let _ = std::fs::remove_dir_all(&w.dir);
    Ok(Row {
        suite: "churn",
        case: "cli-single-remembers".into(),
        runs: 1,
        passed: u64::from(failures.is_empty()),
        counts,
        failures,
    })
}

/// Segments of the tantivy index in `tdir`, from its `meta.json`.
fn segment_count(tdir: &Path) -> Result<u64> {
    let meta = tdir.join("meta.json");
    let text = std::fs::read_to_string(&meta).map_err(BenchError::io_at("reading", &meta))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|source| BenchError::Json { what: format!("parsing {}", meta.display()), source })?;
    Ok(v["segments"].as_array().map(|a| a.len() as u64).unwrap_or(0))
}

/// `n` trials: a store of `memories` memories; while `reindex` runs, recall again and again.
pub fn readers(exe: &Path, work: &Path, n: usize, memories: usize, config: &[String]) -> Result<Row> {
    let w = World { exe: exe.to_path_buf(), dir: work.join("readers"), config: config.to_vec() };
    // At most 256 memories per turn (the extraction bound).
    for start in (0..memories).step_by(250) {
        let lines: Vec<String> =
            (start..memories.min(start + 250)).map(|i| format!("[SEM] Readtok{i} | colour | shade{i}")).collect();
        w.run(T0, &["remember", &lines.join("\n")])?.expect_ok("seeding the readers' store")?;
    }
    let mut failures = Vec::new();
    let (mut passed, mut overlapped, mut slow, mut failed, mut own_index) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut worst = Duration::ZERO;
    let (mut beside_ms, mut alone_ms) = (Vec::new(), Vec::new());
    for trial in 0..n {
        let probe = format!("Readtok{}", trial % memories.max(1));
        // The same recall with no writer running, for comparison.
        for _ in 0..3 {
            let started = Instant::now();
            w.run_logged(T1, &["recall", &probe, "--mode", "lexical", "--raw", "--json"])?
                .expect_ok("a recall with no writer")?;
            alone_ms.push(started.elapsed().as_secs_f64() * 1e3);
        }
        let mut reindex = w.spawn(T1, &["reindex"])?;
        let mut ok = true;
        loop {
            let running = reindex.try_wait().map_err(BenchError::io_at("waiting for", exe))?.is_none();
            let started = Instant::now();
            let r = w.run_logged(T1, &["recall", &probe, "--mode", "lexical", "--raw", "--json"])?;
            let took = started.elapsed();
            // Only a recall that began and ended while the reindex ran counts as beside it.
            let beside = running && reindex.try_wait().map_err(BenchError::io_at("waiting for", exe))?.is_none();
            if !beside {
                break;
            }
            overlapped += 1;
            worst = worst.max(took);
            beside_ms.push(took.as_secs_f64() * 1e3);
            let mut bad = Vec::new();
            if !r.ok {
                failed += 1;
                bad.push(format!("failed: {}", r.stderr.trim()));
            } else if !r.stdout.contains(&probe) {
                failed += 1;
                bad.push(format!("did not find {probe}"));
            }
            if took > READER_BOUND {
                slow += 1;
                bad.push(format!("took {} ms", took.as_millis()));
            }
            if r.stderr.contains("built in memory") {
                own_index += 1;
                bad.push("built an index of its own in memory".into());
            }
            if !bad.is_empty() {
                ok = false;
                if failures.len() < 5 {
                    failures.push(format!("trial {trial}, a recall beside reindex: {}", bad.join("; ")));
                }
            }
        }
        let status = reindex.wait().map_err(BenchError::io_at("waiting for", exe))?;
        if !status.success() {
            ok = false;
            failures.push(format!("trial {trial}: reindex failed ({status})"));
        }
        passed += u64::from(ok);
    }
    let mut counts = super::counts([
        ("memories", memories as u64),
        ("recalls_beside_reindex", overlapped),
        ("recalls_failed", failed),
        ("recalls_over_1s", slow),
        ("recalls_building_their_own_index", own_index),
        ("slowest_ms", worst.as_millis() as u64),
    ]);
    counts.insert("recall_p50_ms_beside_reindex".into(), median(&mut beside_ms).into());
    counts.insert("recall_p50_ms_alone".into(), median(&mut alone_ms).into());
    let _ = std::fs::remove_dir_all(&w.dir);
    Ok(Row { suite: "readers", case: "recall-beside-reindex".into(), runs: n as u64, passed, counts, failures })
}

/// The median of `v` in whole milliseconds (0 when empty).
fn median(v: &mut [f64]) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2].round() as u64
}
