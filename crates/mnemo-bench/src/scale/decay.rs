//! The decay sweep at N: with none due (what most sweeps find), against the full scan the
//! sweep made before due times were stored (every active memory read and scored), and with k
//! due (k memories inserted 60 days old, which the sweep must tombstone). Runs last: it adds
//! and tombstones memories.
use std::sync::Arc;
use std::time::Instant;

use mnemo_contract::salience::salience;
use mnemo_contract::time::DAY_MS;
use mnemo_contract::{
    CharTokenCounter, EnginePolicy, Index, MemoryKind, Namespace, SimClock, Store, Timestamp, WriteOp,
};
use mnemo_core::engine::EngineParts;
use mnemo_core::Engine;

use super::synth::{Corpus, SynthEmbedder};
use super::{memory, ns_of, ScaleArgs};
use crate::error::Result;
use crate::util::NoReasoner;

/// Memories made due for the second sweep: 1 % of N, at least 1, at most 1000.
fn due_count(n: usize) -> usize {
    (n / 100).clamp(1, 1000)
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn decay_rows(
    args: &ScaleArgs,
    n: usize,
    first_new: usize,
    now: Timestamp,
    model: &str,
    corpus: &Corpus,
    store: &Arc<dyn Store>,
    index: &Arc<dyn Index>,
    embedder: &Arc<SynthEmbedder>,
    push: &mut impl FnMut(&'static str, f64, &'static str, &str),
) -> Result<()> {
    let policy = EnginePolicy::default();
    let eng = Engine::new(EngineParts {
        store: store.clone(),
        index: index.clone(),
        embedder: embedder.clone(),
        reasoner: Arc::new(NoReasoner),
        clock: Arc::new(SimClock::new(now)),
        tokens: Arc::new(CharTokenCounter),
        policy: policy.clone(),
    })?;
    let namespaces: Vec<Namespace> = (0..args.namespaces).map(|i| ns_of(i, args.namespaces)).collect::<Result<_>>()?;
    // Warm-up (a store that records its rule per namespace computes it here, once).
    for ns in &namespaces {
        eng.decay_sweep(ns).await?;
    }

    let (ms, examined, decayed) = timed_sweep(&eng, &namespaces).await?;
    push(
        "decay_sweep_none_due_ms",
        ms,
        "ms",
        &format!("engine decay sweep, nothing due: {examined} examined, {decayed} decayed"),
    );

    let t0 = Instant::now();
    let mut read = 0;
    let mut below = 0;
    for ns in &namespaces {
        let active = store.active(ns).await?;
        read += active.len();
        below += active
            .iter()
            .filter(|m| policy.kinds.of(m.kind).decays && !m.pinned)
            .filter(|m| salience(m, now, &policy) < policy.decay.threshold)
            .count();
    }
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    push(
        "decay_full_scan_ms",
        ms,
        "ms",
        &format!("the sweep's read before due times: Store::active + salience of all {read} ({below} below)"),
    );

    let k = due_count(n);
    let old = Timestamp(now.0 - 60 * DAY_MS);
    for chunk in (first_new..first_new + k).collect::<Vec<_>>().chunks(1000) {
        let mut by_ns: std::collections::BTreeMap<Namespace, Vec<WriteOp>> = Default::default();
        for &j in chunk {
            let ns = ns_of(j, args.namespaces)?;
            let mut m = memory(corpus, j, ns.clone(), now, model);
            m.kind = MemoryKind::Episodic;
            m.importance = 0.5;
            m.created_at = old;
            by_ns.entry(ns).or_default().push(WriteOp::Insert { memory: m, turn: None });
        }
        for (ns, ops) in by_ns {
            store.apply(&ns, old, ops).await?;
        }
    }
    eng.sync_index(&|_, _| {}).await?;
    let (ms, examined, decayed) = timed_sweep(&eng, &namespaces).await?;
    push(
        "decay_sweep_k_due_ms",
        ms,
        "ms",
        &format!(
            "engine decay sweep with {k} due (60 days old): {examined} examined, {decayed} tombstoned, index synced"
        ),
    );
    Ok(())
}

/// One engine decay sweep over every namespace: its time (ms), memories examined, tombstoned.
async fn timed_sweep(eng: &Engine, namespaces: &[Namespace]) -> Result<(f64, usize, usize)> {
    let t0 = Instant::now();
    let (mut examined, mut decayed) = (0, 0);
    for ns in namespaces {
        let r = eng.decay_sweep(ns).await?;
        examined += r.examined;
        decayed += r.decayed.len();
    }
    Ok((t0.elapsed().as_secs_f64() * 1000.0, examined, decayed))
}
