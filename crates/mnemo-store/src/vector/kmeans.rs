//! Seeded spherical k-means (the IVF coarse quantizer) and nearest-centroid lookups.
//!
//! Deterministic: the sample and the initial centroids come from a seeded generator, each
//! point's nearest centroid does not depend on how the rows are split over threads, and sums
//! are accumulated in row order. Spherical because the vectors are unit vectors compared by
//! dot product: a centroid is the normalised mean of its points.
//!
//! Lookups are exact (every centroid compared). Tried and dropped: a second level (the
//! centroids clustered into ~√lists groups, a vector compared with the centroids of its 4 best
//! groups only): ~10× fewer dot products, but on the scale benchmark's topic vectors, whose
//! clusters are unrelated to each other, it filed so many vectors under a wrong list that
//! recall@10 fell from .93 to .53 (1,024 lists, 100k vectors).
use super::kernels::dots_f32;
use super::split;

/// Sample points per list used to train the centroids (faiss uses 39..256; the lists only
/// need to be roughly right for IVF to find the neighbours).
const SAMPLE_PER_LIST: usize = 24;
/// Lloyd iterations at most (stops early when no point changes cluster).
const ITERATIONS: usize = 6;
/// Rows above which an assignment is split over threads.
const PARALLEL_ASSIGN: usize = 1_024;

/// SplitMix64: small, fast and well mixed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The nearest of `centroids` (rows of `v.len()`) to `v` and its dot product; ties to the
/// lower index. `scores` is scratch space of one slot per centroid.
#[inline]
fn nearest(centroids: &[f32], v: &[f32], scores: &mut [f32]) -> (u32, f32) {
    dots_f32(centroids, v, scores);
    let mut best = (0u32, f32::NEG_INFINITY);
    for (i, &s) in scores.iter().enumerate() {
        if s > best.1 {
            best = (i as u32, s);
        }
    }
    best
}

/// The nearest centroid of every row of `data` (rows of `d`), using every core.
fn assign_exact(data: &[f32], d: usize, centroids: &[f32]) -> Vec<(u32, f32)> {
    let rows = data.len() / d;
    split(rows, PARALLEL_ASSIGN, |lo, hi| {
        let mut scores = vec![0f32; centroids.len() / d];
        data[lo * d..hi * d].chunks_exact(d).map(|v| nearest(centroids, v, &mut scores)).collect::<Vec<_>>()
    })
    .concat()
}

/// The IVF centroids, looked up exactly.
#[derive(Clone)]
pub(crate) struct Quantizer {
    d: usize,
    centroids: Vec<f32>,
}

impl Quantizer {
    /// Over `centroids` (`n × d`, n ≥ 1).
    pub(crate) fn new(centroids: Vec<f32>, d: usize) -> Self {
        Quantizer { d, centroids }
    }

    pub(crate) fn centroids(&self) -> &[f32] {
        &self.centroids
    }

    /// The nearest centroid to `v`.
    pub(crate) fn nearest(&self, v: &[f32]) -> (u32, f32) {
        nearest(&self.centroids, v, &mut vec![0f32; self.centroids.len() / self.d.max(1)])
    }

    /// The nearest centroid of every row of `data`, using every core.
    pub(crate) fn assign_all(&self, data: &[f32]) -> Vec<(u32, f32)> {
        assign_exact(data, self.d, &self.centroids)
    }
}

/// Scale `v` to unit length (left alone when it is zero).
fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// A seeded sample of `min(rows, want)` of the row numbers `0..rows`, in random order; its
/// first `at_least` are distinct rows.
fn sample_order(rows: usize, want: usize, at_least: usize, seed: u64) -> Vec<u32> {
    let s = rows.min(want.max(at_least));
    let mut rng = Rng::new(seed);
    // A partial Fisher-Yates shuffle of the row numbers: the first `s` are the sample.
    let mut order: Vec<u32> = (0..rows as u32).collect();
    for i in 0..s {
        let j = i + rng.below(rows - i);
        order.swap(i, j);
    }
    order.truncate(s);
    order
}

/// Spherical Lloyd iterations over `points` from `centroids` (exact lookups). An emptied
/// centroid takes the points served worst, in turn. Returns the centroids.
fn lloyd(points: &[f32], d: usize, mut centroids: Vec<f32>, iterations: usize) -> Vec<f32> {
    let s = points.len() / d;
    let lists = centroids.len() / d;
    let mut assigned: Vec<u32> = vec![u32::MAX; s];
    for _ in 0..iterations {
        let near = assign_exact(points, d, &centroids);
        let changed = near.iter().zip(&assigned).filter(|(n, a)| n.0 != **a).count();
        assigned = near.iter().map(|n| n.0).collect();
        let mut sums = vec![0f32; lists * d];
        let mut counts = vec![0usize; lists];
        for (p, &c) in points.chunks_exact(d).zip(&assigned) {
            let c = c as usize;
            counts[c] += 1;
            for (a, x) in sums[c * d..(c + 1) * d].iter_mut().zip(p) {
                *a += x;
            }
        }
        let mut worst: Vec<usize> = (0..s).collect();
        worst.sort_by(|&a, &b| near[a].1.total_cmp(&near[b].1).then(a.cmp(&b)));
        let mut worst = worst.into_iter();
        for c in 0..lists {
            let slot = &mut sums[c * d..(c + 1) * d];
            if counts[c] == 0 {
                if let Some(p) = worst.next() {
                    slot.copy_from_slice(&points[p * d..(p + 1) * d]);
                }
            }
            normalise(slot);
        }
        centroids = sums;
        if changed == 0 {
            break;
        }
    }
    centroids
}

/// Train `lists` centroids (row-major, `lists × d`) on a seeded sample of `rows` rows, row
/// `g` written by `gather(g, out)` (appending its `d` floats). `lists` is clamped to
/// 1..=rows; empty when there are no rows. Each iteration uses an exact lookup of the current
/// centroids.
pub(crate) fn train(rows: usize, d: usize, lists: usize, seed: u64, gather: impl Fn(usize, &mut Vec<f32>)) -> Vec<f32> {
    if rows == 0 {
        return vec![];
    }
    let lists = lists.clamp(1, rows);
    // The sample is in random order, so its first `lists` rows are random initial centroids.
    let order = sample_order(rows, lists * SAMPLE_PER_LIST, lists, seed);
    let mut sample = Vec::with_capacity(order.len() * d);
    for g in order {
        gather(g as usize, &mut sample);
    }
    let init = sample[..lists * d].to_vec();
    lloyd(&sample, d, init, ITERATIONS)
}

#[cfg(test)]
mod tests {
    use super::super::pseudo;
    use super::*;

    #[test]
    fn training_is_deterministic_and_separates_clear_clusters() {
        // Three tight clusters around three axes of 8 dimensions.
        let d = 8;
        let mut data = Vec::new();
        for i in 0..300u64 {
            let mut v = pseudo(i, d).iter().map(|x| x * 0.1).collect::<Vec<_>>();
            v[(i % 3) as usize] += 1.0;
            normalise(&mut v);
            data.extend(v);
        }
        let gather = |g: usize, out: &mut Vec<f32>| out.extend_from_slice(&data[g * d..(g + 1) * d]);
        let a = train(300, d, 3, 7, gather);
        let assign_all = |data: &[f32], d: usize, c: &[f32]| Quantizer::new(c.to_vec(), d).assign_all(data);
        assert_eq!(a, train(300, d, 3, 7, gather), "same seed and rows, same centroids");
        let near = assign_all(&data, d, &a);
        // Every point of a cluster lands in the same list, and the three lists differ.
        let of = |k: usize| near[k].0;
        for i in 0..300 {
            assert_eq!(of(i), of(i % 3), "point {i}");
        }
        assert!(of(0) != of(1) && of(1) != of(2) && of(0) != of(2));
        // More lists than rows: clamped.
        assert_eq!(train(2, d, 5, 1, gather).len(), 2 * d);
    }
}
