//! How many IVF lists a search must scan to hold its recall, measured on the namespace's own
//! vectors when its IVF is trained or restored.
//!
//! Why: a fixed `ivf_nprobe` holds recall only for the vectors it was tuned on. Vectors with
//! topic structure (real embeddings) are found in a few lists; nearly structureless ones
//! (uniformly spread) need most of them — at 100k, 48 of 1,024 lists gave recall@10 .96 on the
//! first and .35 on the second. So the IVF measures itself: stored vectors taken as queries
//! (their own row left out), the top [`K`] of the full scan of the int8 codes against the
//! IVF's (the codes' own loss against f32 is measured by `bench scale --dense-only`), and the
//! probe count raised by a quarter from the configured one until the mean recall reaches the
//! target (`[index] ivf_recall_target`) with a margin. Where no count short of every list
//! reaches it, every list is scanned: slower, never silently worse than exact.
//!
//! The margin: a stored vector taken as a query is easier than a fresh query (its neighbours
//! crowd around it). At 100k topic vectors (1,024 lists) the count that gave .95 on its own
//! vectors gave .93 to .946 on the benchmark's queries, so the calibration aims at the target
//! plus [`MARGIN_SHARE`] of what it leaves to 1 (.98 for .95). Steps of a quarter (not a half)
//! keep the count from overshooting by much.
//!
//! Why .98 and 128 sampled vectors (not .97 and 48): own-vector recall is flat near the top, so
//! with 48 samples (480 neighbours, a standard error of ~0.8 points) the count reaching .97 came
//! out anywhere from 60 to 185 probes between runs of the same 100k benchmark, and 60 gave .932
//! on fresh queries. Aiming at .98 (185 probes: .977 on fresh queries) over 128 samples costs the
//! dense search ~0.6 ms at 100k; a recall below the target is the worse failure.
use mnemo_contract::MemoryId;

use super::code::{decode_into, Code};
use super::space::Space;

/// Ranks compared.
pub const K: usize = 10;
/// Stored vectors used as queries (spread evenly over the lists' rows).
pub const QUERIES: usize = 128;
/// Share of the gap between the target and 1 added to the target (see the module docs).
pub const MARGIN_SHARE: f64 = 0.6;

/// The least probe count, from `floor` up by a quarter each step, whose recall@K on `space`'s own
/// vectors reaches `target`; the number of lists when none short of it does.
pub(crate) fn probes_for_recall(space: &Space, d: usize, floor: usize, target: f64) -> usize {
    let lists = space.blocks.len();
    let samples = sample(space, d);
    if samples.is_empty() || lists <= 1 {
        return lists.max(1);
    }
    let exact: Vec<Vec<MemoryId>> = samples.iter().map(|(id, q)| top(space, q, *id, None)).collect();
    let aim = target + (1.0 - target).max(0.0) * MARGIN_SHARE;
    let mut p = floor.max(1);
    while p < lists {
        let hits: usize = samples
            .iter()
            .zip(&exact)
            .map(|((id, q), ex)| top(space, q, *id, Some(p)).iter().filter(|m| ex.contains(m)).count())
            .sum();
        let wanted: usize = exact.iter().map(Vec::len).sum();
        if wanted == 0 || hits as f64 >= aim * wanted as f64 {
            return p;
        }
        p = p.saturating_add(p.div_ceil(4));
    }
    lists
}

/// The best K of `q` other than `own`, by the exact scan (None) or `nprobe` lists.
fn top(space: &Space, q: &Code, own: MemoryId, nprobe: Option<usize>) -> Vec<MemoryId> {
    space.search(q, K + 1, nprobe).into_iter().map(|(id, _)| id).filter(|id| *id != own).take(K).collect()
}

/// Up to [`QUERIES`] stored rows, evenly spaced over all rows (deterministic).
fn sample(space: &Space, d: usize) -> Vec<(MemoryId, Code)> {
    let rows = space.rows;
    if rows <= K {
        return vec![];
    }
    let step = (rows / QUERIES).max(1);
    let mut out = Vec::new();
    let mut i = 0usize;
    for b in &space.blocks {
        for (id, codes, scale) in b.rows(d) {
            if i.is_multiple_of(step) && out.len() < QUERIES {
                let mut v = Vec::with_capacity(d);
                decode_into(codes, scale, &mut v);
                out.push((id, Code::of(&v)));
            }
            i += 1;
        }
    }
    out
}
