//! The nearest centroid of many vectors at once: what filing a batch of inserts, a k-means
//! iteration and the filing after a training all do.
//!
//! Compared one vector at a time, every vector streams the whole centroid matrix (1,024 × 256
//! `f32` is 1 MiB, more than this machine's L2) from memory. Here [`TILE`] vectors are
//! compared with each centroid while it is loaded, so the centroids are read once per tile,
//! and each vector's sums are accumulated exactly as [`dot`](super::dot) accumulates them
//! (8 lanes, then the lanes and the tail): the answers are the same, bit for bit, as
//! [`nearest`] row by row.
use super::kmeans::nearest;

/// Vectors compared with one centroid at a time (4 × 8 accumulators fill 8 SSE registers).
const TILE: usize = 4;

/// The nearest of `centroids` (rows of `d`) to each row of `data` and its dot product; ties to
/// the lower index (as `nearest`).
pub(crate) fn nearest_each(centroids: &[f32], d: usize, data: &[f32]) -> Vec<(u32, f32)> {
    if d == 0 {
        return vec![];
    }
    let mut out = Vec::with_capacity(data.len() / d);
    let mut tiles = data.chunks_exact(TILE * d);
    for tile in &mut tiles {
        let mut best = [(0u32, f32::NEG_INFINITY); TILE];
        for (i, c) in centroids.chunks_exact(d).enumerate() {
            let s = dot_tile(c, tile, d);
            for (b, s) in best.iter_mut().zip(s) {
                if s > b.1 {
                    *b = (i as u32, s);
                }
            }
        }
        out.extend(best);
    }
    out.extend(tiles.remainder().chunks_exact(d).map(|v| nearest(centroids, d, v)));
    out
}

/// `dot(c, row)` for each of the [`TILE`] rows of `tile` (rows of `d`), summed in `dot`'s order.
#[inline]
fn dot_tile(c: &[f32], tile: &[f32], d: usize) -> [f32; TILE] {
    let (r0, rest) = tile.split_at(d);
    let (r1, rest) = rest.split_at(d);
    let (r2, r3) = rest.split_at(d);
    let mut acc = [[0f32; 8]; TILE];
    let chunks = c
        .chunks_exact(8)
        .zip(r0.chunks_exact(8))
        .zip(r1.chunks_exact(8))
        .zip(r2.chunks_exact(8))
        .zip(r3.chunks_exact(8));
    for ((((x, a), b), e), f) in chunks {
        for i in 0..8 {
            acc[0][i] += x[i] * a[i];
            acc[1][i] += x[i] * b[i];
            acc[2][i] += x[i] * e[i];
            acc[3][i] += x[i] * f[i];
        }
    }
    let tail_from = d - d % 8;
    let tail = |r: &[f32]| -> f32 { c[tail_from..].iter().zip(&r[tail_from..]).map(|(x, y)| x * y).sum() };
    [
        acc[0].iter().sum::<f32>() + tail(r0),
        acc[1].iter().sum::<f32>() + tail(r1),
        acc[2].iter().sum::<f32>() + tail(r2),
        acc[3].iter().sum::<f32>() + tail(r3),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::pseudo;
    use super::*;

    #[test]
    fn tiles_answer_bit_for_bit_as_one_vector_at_a_time() {
        // Dimensions with and without a tail, rows that do and do not fill the last tile.
        for (d, rows, lists) in [(16, 13, 7), (19, 9, 5), (256, 8, 33), (3, 2, 4)] {
            let centroids: Vec<f32> = (0..lists).flat_map(|i| pseudo(500 + i as u64, d)).collect();
            let data: Vec<f32> = (0..rows).flat_map(|i| pseudo(i as u64, d)).collect();
            let tiled = nearest_each(&centroids, d, &data);
            assert_eq!(tiled.len(), rows);
            for (r, (l, s)) in tiled.iter().enumerate() {
                let (l1, s1) = nearest(&centroids, d, &data[r * d..(r + 1) * d]);
                assert_eq!((*l, s.to_bits()), (l1, s1.to_bits()), "d {d}, row {r}");
            }
        }
        // Ties go to the lower index, as row by row.
        let same = [1.0f32, 0.0, 1.0, 0.0];
        let data = [1.0f32, 0.0].repeat(5);
        assert!(nearest_each(&same, 2, &data).iter().all(|(l, _)| *l == 0));
    }
}
