//! Seeded spherical k-means (the IVF coarse quantizer) and nearest-centroid lookups.
//!
//! Deterministic: the sample and the initial centroids come from a seeded generator, each
//! point's nearest centroid does not depend on how the rows are split over threads, and sums
//! are accumulated in row order. Spherical because the vectors are unit vectors compared by
//! dot product: a centroid is the normalised mean of its points.
//!
//! Seeded by k-means++ ([`seed_spread`]); the training's assignments compare int8 codes
//! ([`assign_codes`]); filing a new vector ranks the centroids by their codes and compares the
//! best [`FILE_SHORTLIST`] exactly ([`Quantizer::file`]); re-filing a list's rows after a
//! training compares every `f32` centroid ([`Quantizer::assign_all`]); a search orders its
//! probes by the centroids' codes ([`Quantizer::rank`]). Tried and dropped: a second level (the
//! centroids clustered into ~√lists groups, a vector compared with the centroids of its 4 best
//! groups only): ~10× fewer dot products, but on the scale benchmark's topic vectors, whose
//! clusters are unrelated to each other, it filed so many vectors under a wrong list that
//! recall@10 fell from .93 to .53 (1,024 lists, 100k vectors).
use super::code::quantise_into;
use super::kernels::{dots_f32, dots_i8};
use super::split;

/// Sample points per list used to train the centroids (faiss uses 39..256).
///
/// Why 64 and 20 iterations (from 24 and 6, with random points as initial centroids): a
/// cluster of the data that gets no centroid of its own is split over unrelated lists, and a
/// search must probe many lists to gather its members. On the scale benchmark's topic vectors
/// (100k, 2,000 topics, 1,024 lists) the old training left so many topics scattered that the
/// calibration needed 118–290 probes for its recall; seeded by k-means++ ([`seed_spread`]),
/// with 64 points per list and up to 20 iterations, 8–22 probes reach it (recall@10 on fresh
/// queries .980–.992 against .966). A training costs more (11.6 s instead of 7.7 at 100k with
/// filing and calibration, in the background), each search far less (bench/RESULTS.md).
const SAMPLE_PER_LIST: usize = 64;
/// Lloyd iterations at most (stops early when at most 0.1% of the points change cluster).
const ITERATIONS: usize = 20;
/// Rows above which an assignment is split over threads.
const PARALLEL_ASSIGN: usize = 1_024;
/// Centroids compared exactly when a new vector is filed: the best of the int8 ranking.
///
/// Why: filing exactly streamed the whole `f32` centroid matrix for every vector (1 MB at
/// 1,024 lists × 256 dimensions), 15% of a one-at-a-time write's time at 100k (RESULTS.md,
/// stop 29). The int8 codes are a quarter of those bytes, and their dot products are within
/// about a hundredth of the exact ones (see `code`), so the exact nearest is among their best
/// few; the shortlist's exact comparison then decides between near-equal centroids.
pub(crate) const FILE_SHORTLIST: usize = 8;

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
    best_of(scores.iter().copied())
}

/// The index of the highest score and the score; ties to the lower index.
fn best_of(scores: impl Iterator<Item = f32>) -> (u32, f32) {
    let mut best = (0u32, f32::NEG_INFINITY);
    for (i, s) in scores.enumerate() {
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

/// The IVF centroids: looked up exactly (`f32`) to file a vector, by their int8 codes to
/// order a search's probes.
#[derive(Clone)]
pub(crate) struct Quantizer {
    d: usize,
    centroids: Vec<f32>,
    codes: Codes,
}

impl Quantizer {
    /// Over `centroids` (`n × d`, n ≥ 1).
    pub(crate) fn new(centroids: Vec<f32>, d: usize) -> Self {
        let codes = Codes::of(&centroids, d.max(1));
        Quantizer { d, centroids, codes }
    }

    /// Every centroid's approximate dot product with the query whose codes are `q` (up to
    /// the query's own scale, which does not change the order): the probe order of a search.
    /// A quarter of the bytes of the `f32` centroids, which a search otherwise reads whole
    /// (1 MB at 1,024 lists × 256 dimensions, more than the rows it then scans at few probes);
    /// an order swapped between near-equal centroids moves a list by a rank or two, which the
    /// probe count's calibration (by this same order) absorbs.
    pub(crate) fn rank(&self, q: &[i8]) -> Vec<f32> {
        let mut dots = vec![0i32; self.codes.scales.len()];
        self.codes.scores(q, &mut dots).collect()
    }

    pub(crate) fn centroids(&self) -> &[f32] {
        &self.centroids
    }

    /// The nearest centroid of every row of `data`, using every core.
    pub(crate) fn assign_all(&self, data: &[f32]) -> Vec<(u32, f32)> {
        assign_exact(data, self.d, &self.centroids)
    }

    /// The list each row of `data` is filed under: the nearest of the [`FILE_SHORTLIST`]
    /// centroids whose codes rank best against the row's codes, compared exactly (ties to the
    /// lower index); every core for many rows. The same row always gets the same list.
    pub(crate) fn file(&self, data: &[f32]) -> Vec<u32> {
        let d = self.d.max(1);
        let rows = data.len() / d;
        split(rows, PARALLEL_ASSIGN, |lo, hi| {
            let mut scratch = FileScratch::new(self.codes.scales.len(), d);
            data[lo * d..hi * d].chunks_exact(d).map(|v| self.file_one(v, &mut scratch)).collect::<Vec<_>>()
        })
        .concat()
    }

    fn file_one(&self, v: &[f32], s: &mut FileScratch) -> u32 {
        let n = self.codes.scales.len();
        if n <= FILE_SHORTLIST {
            return nearest(&self.centroids, v, &mut s.exact).0;
        }
        s.query.clear();
        quantise_into(v, &mut s.query);
        s.ranked.clear();
        s.ranked.extend(self.codes.scores(&s.query, &mut s.dots).enumerate().map(|(i, x)| (x, i as u32)));
        // Best first, ties to the lower index (the exact lookup's order).
        let by_rank = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        s.ranked.select_nth_unstable_by(FILE_SHORTLIST - 1, by_rank);
        let short = &mut s.ranked[..FILE_SHORTLIST];
        short.sort_unstable_by_key(|&(_, i)| i);
        let mut best = (0u32, f32::NEG_INFINITY);
        for &(_, i) in short.iter() {
            let c = &self.centroids[i as usize * self.d..(i as usize + 1) * self.d];
            let x = super::dot(c, v);
            if x > best.1 {
                best = (i, x);
            }
        }
        best.0
    }
}

/// Scratch space of [`Quantizer::file`], reused across the rows of one thread.
struct FileScratch {
    query: Vec<i8>,
    dots: Vec<i32>,
    ranked: Vec<(f32, u32)>,
    exact: Vec<f32>,
}

impl FileScratch {
    fn new(lists: usize, d: usize) -> Self {
        FileScratch {
            query: Vec::with_capacity(d),
            dots: vec![0; lists],
            ranked: Vec::with_capacity(lists),
            exact: vec![0.0; lists],
        }
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

/// Vectors as int8 codes (rows of `d`) and their scales.
#[derive(Clone)]
struct Codes {
    codes: Vec<i8>,
    scales: Vec<f32>,
}

impl Codes {
    fn of(rows: &[f32], d: usize) -> Self {
        let mut codes = Vec::with_capacity(rows.len());
        let scales = rows.chunks_exact(d).map(|r| quantise_into(r, &mut codes)).collect();
        Codes { codes, scales }
    }

    /// Each row's dot product with the query whose codes are `q`, up to the query's scale
    /// (`dots`: scratch space of one slot per row).
    fn scores<'a>(&'a self, q: &[i8], dots: &'a mut [i32]) -> impl Iterator<Item = f32> + 'a {
        dots_i8(&self.codes, q, dots);
        dots.iter().zip(&self.scales).map(|(&x, &s)| x as f32 * s)
    }

    /// Add row `r`'s vector (codes × scale) into `sums`.
    fn add_row(&self, r: usize, sums: &mut [f32]) {
        let d = sums.len();
        let s = self.scales[r];
        for (a, &c) in sums.iter_mut().zip(&self.codes[r * d..(r + 1) * d]) {
            *a += c as f32 * s;
        }
    }
}

/// The nearest centroid of every point and its (approximate) dot product, both as int8 codes:
/// the assignment step of training, where a point filed next to its exact list costs nothing
/// (the centroids only need to be roughly right) and the integer dots read a quarter of the
/// bytes of `f32` ones. Ties to the lower index; every core.
fn assign_codes(points: &Codes, d: usize, centroids: &Codes) -> Vec<(u32, f32)> {
    let rows = points.scales.len();
    split(rows, PARALLEL_ASSIGN, |lo, hi| {
        let mut dots = vec![0i32; centroids.scales.len()];
        (lo..hi)
            .map(|r| {
                let (list, score) = best_of(centroids.scores(&points.codes[r * d..(r + 1) * d], &mut dots));
                (list, score * points.scales[r])
            })
            .collect::<Vec<_>>()
    })
    .concat()
}

/// Spherical Lloyd iterations over `points` from `centroids` (assignments by int8 codes, see
/// [`assign_codes`]). An emptied centroid takes the points served worst, in turn. Returns the
/// centroids.
fn lloyd(codes: &Codes, d: usize, mut centroids: Vec<f32>, iterations: usize) -> Vec<f32> {
    let s = codes.scales.len();
    let lists = centroids.len() / d;
    let mut assigned: Vec<u32> = vec![u32::MAX; s];
    for _ in 0..iterations {
        let near = assign_codes(codes, d, &Codes::of(&centroids, d));
        let changed = near.iter().zip(&assigned).filter(|(n, a)| n.0 != **a).count();
        assigned = near.iter().map(|n| n.0).collect();
        let mut sums = vec![0f32; lists * d];
        let mut counts = vec![0usize; lists];
        for (p, &c) in assigned.iter().enumerate() {
            let c = c as usize;
            counts[c] += 1;
            codes.add_row(p, &mut sums[c * d..(c + 1) * d]);
        }
        let mut worst: Vec<usize> = (0..s).collect();
        worst.sort_by(|&a, &b| near[a].1.total_cmp(&near[b].1).then(a.cmp(&b)));
        let mut worst = worst.into_iter();
        for c in 0..lists {
            let slot = &mut sums[c * d..(c + 1) * d];
            if counts[c] == 0 {
                if let Some(p) = worst.next() {
                    codes.add_row(p, slot);
                }
            }
            normalise(slot);
        }
        centroids = sums;
        // Converged enough: the last moves are a few border points (on the scale benchmark's
        // 65k-point sample, 0.1% by the 12th–13th iteration), which cost a full pass each.
        if changed.saturating_mul(1000) <= s {
            break;
        }
    }
    centroids
}

/// Train `lists` centroids (row-major, `lists × d`) on a seeded sample of `rows` rows, row
/// `g` written by `gather(g, out)` (appending its `d` floats). `lists` is clamped to
/// 1..=rows; empty when there are no rows. Seeded by k-means++, assignments by int8 codes.
pub(crate) fn train(rows: usize, d: usize, lists: usize, seed: u64, gather: impl Fn(usize, &mut Vec<f32>)) -> Vec<f32> {
    if rows == 0 {
        return vec![];
    }
    let lists = lists.clamp(1, rows);
    let order = sample_order(rows, lists * SAMPLE_PER_LIST, lists, seed);
    // The sample kept as int8 codes only: a quarter of the bytes (17 MB, not 67, for 65k
    // points of 256 dimensions at 1,024 lists), and the rows are codes in the index anyway.
    let mut sample = Codes { codes: Vec::with_capacity(order.len() * d), scales: Vec::with_capacity(order.len()) };
    let mut row = Vec::with_capacity(d);
    for g in order {
        row.clear();
        gather(g as usize, &mut row);
        sample.scales.push(quantise_into(&row, &mut sample.codes));
    }
    let init = seed_spread(&sample, d, lists, seed);
    lloyd(&sample, d, init, ITERATIONS)
}

/// k-means++ seeding over `points` (by their int8 codes): the first centroid a random point,
/// each next one a point drawn with probability proportional to its distance (1 − best
/// cosine) from the centroids chosen so far. Why: random points as initial centroids leave
/// some clusters without one, and Lloyd's iterations rarely give them one later; their points
/// then scatter over unrelated lists, and a search must probe many lists to find them.
fn seed_spread(codes: &Codes, d: usize, lists: usize, seed: u64) -> Vec<f32> {
    let s = codes.scales.len();
    let mut rng = Rng::new(seed ^ 0x5EED_5EED);
    let mut out = Vec::with_capacity(lists * d);
    let mut best = vec![f32::NEG_INFINITY; s];
    let mut pick = rng.below(s);
    loop {
        let at = out.len();
        out.resize(at + d, 0.0);
        codes.add_row(pick, &mut out[at..]);
        if out.len() >= lists * d {
            return out;
        }
        let c = &codes.codes[pick * d..(pick + 1) * d];
        let cs = codes.scales[pick];
        let dots = split(s, 4 * PARALLEL_ASSIGN, |lo, hi| {
            let mut dots = vec![0i32; hi - lo];
            dots_i8(&codes.codes[lo * d..hi * d], c, &mut dots);
            dots
        });
        for ((b, x), ps) in best.iter_mut().zip(dots.iter().flatten()).zip(&codes.scales) {
            *b = b.max(*x as f32 * cs * ps);
        }
        // A zero vector is no farther from one centroid than another: never drawn (else
        // repeated zero rows would be drawn again and again as duplicate centroids).
        let gap = |b: f32, scale: f32| if scale == 0.0 { 0.0 } else { f64::from(1.0 - b).max(0.0) };
        let total: f64 = best.iter().zip(&codes.scales).map(|(&b, &sc)| gap(b, sc)).sum();
        if total <= 0.0 {
            pick = rng.below(s);
            continue;
        }
        let mut r = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
        pick = s - 1;
        for (i, (&b, &sc)) in best.iter().zip(&codes.scales).enumerate() {
            r -= gap(b, sc);
            if r <= 0.0 {
                pick = i;
                break;
            }
        }
    }
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

    #[test]
    fn as_many_lists_as_clusters_give_each_cluster_its_own() {
        // 40 tight clusters around unrelated directions, 40 lists: random initial centroids
        // leave some clusters without one (and split others); the spread seeding does not.
        let (d, clusters, per) = (64, 40usize, 30usize);
        let centres: Vec<Vec<f32>> = (0..clusters).map(|c| pseudo(500 + c as u64, d)).collect();
        let mut data = Vec::new();
        for i in 0..clusters * per {
            let mut v: Vec<f32> = pseudo(10_000 + i as u64, d).iter().map(|x| x * 0.05).collect();
            v.iter_mut().zip(&centres[i % clusters]).for_each(|(a, c)| *a += c);
            normalise(&mut v);
            data.extend(v);
        }
        let gather = |g: usize, out: &mut Vec<f32>| out.extend_from_slice(&data[g * d..(g + 1) * d]);
        for seed in [1u64, 2, 3] {
            let c = train(clusters * per, d, clusters, seed, gather);
            let near = Quantizer::new(c, d).assign_all(&data);
            let list_of: Vec<u32> = (0..clusters).map(|k| near[k].0).collect();
            for (i, n) in near.iter().enumerate() {
                assert_eq!(n.0, list_of[i % clusters], "seed {seed}: point {i} left its cluster's list");
            }
            let mut distinct = list_of.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), clusters, "seed {seed}: two clusters share a list");
        }
    }

    #[test]
    fn filing_by_the_shortlist_finds_the_exact_nearest() {
        // Structureless centroids and queries: the hardest case for the int8 ranking (many
        // near-equal centroids). 1,024 lists of 256 dimensions, as at 100k memories.
        let (d, lists, queries) = (256, 1_024usize, 600usize);
        let mut centroids = Vec::with_capacity(lists * d);
        for c in 0..lists {
            let mut v = pseudo(7 + c as u64, d);
            normalise(&mut v);
            centroids.extend(v);
        }
        let q = Quantizer::new(centroids.clone(), d);
        let mut data = Vec::with_capacity(queries * d);
        for i in 0..queries {
            let mut v = pseudo(90_000 + i as u64, d);
            normalise(&mut v);
            data.extend(v);
        }
        let filed = q.file(&data);
        let exact = q.assign_all(&data);
        assert_eq!(filed.len(), queries);
        let dot_with = |l: u32, v: &[f32]| crate::vector::dot(&centroids[l as usize * d..(l as usize + 1) * d], v);
        let mut same = 0;
        for (i, (f, (e, best))) in filed.iter().zip(&exact).enumerate() {
            let v = &data[i * d..(i + 1) * d];
            same += usize::from(f == e);
            // Never filed far from the nearest: at worst a near-tie of the exact dot products.
            assert!(
                dot_with(*f, v) >= best - 1e-3,
                "row {i}: list {f} ({}) vs the nearest {e} ({best})",
                dot_with(*f, v)
            );
        }
        assert!(same * 1000 >= queries * 995, "{same} of {queries} filed under their exact nearest list");
        // Deterministic, and one row at a time files as the batch does (one thread or two).
        assert_eq!(q.file(&data), filed);
        for (i, f) in filed.iter().enumerate().step_by(97) {
            assert_eq!(q.file(&data[i * d..(i + 1) * d]), vec![*f], "row {i} alone");
        }
        // Fewer lists than the shortlist: compared exactly.
        let small = Quantizer::new(centroids[..3 * d].to_vec(), d);
        let small_exact: Vec<u32> = small.assign_all(&data[..50 * d]).into_iter().map(|(l, _)| l).collect();
        assert_eq!(small.file(&data[..50 * d]), small_exact);
    }
}
