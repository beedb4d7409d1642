//! Fitting word-piece vectors to the teacher's sentence vectors on a corpus (the Tokenlearn
//! idea, as a ridge regression): a text's static vector is the weighted mean of its pieces'
//! vectors, so asking it to equal the teacher's vector of the same text is a linear least
//! squares problem in the piece vectors. Pieces the corpus never shows keep their
//! vocabulary-only vectors (the ridge pulls every piece toward them), so the fit can only move
//! what it has evidence for.
//!
//! Solved by conjugate gradients on the normal equations, every output dimension at once:
//! `(AᵀA + λI) E = AᵀY + λE₀`, with `A` the texts' piece weights (sparse), `Y` the teacher's
//! centred unit vectors and `E₀` the starting vectors scaled to `Y`'s scale.

/// One corpus text: its pieces' ids with their weights (summing to 1), and the teacher's
/// vector of it (centred).
pub(crate) struct Row {
    pub(crate) pieces: Vec<(u32, f32)>,
    pub(crate) target: Vec<f32>,
}

/// Fit `vectors` (vocabulary × `dims`, row-major) to `rows` in place. Returns the mean squared
/// error per text before and after.
pub(crate) fn fit(vectors: &mut [f32], dims: usize, rows: &[Row], lambda: f64, iterations: usize) -> (f64, f64) {
    let vocab = vectors.len() / dims;
    let n = rows.len().max(1) as f64;
    // Scale the start to the targets: the s minimising Σ‖s·A E₀ − Y‖².
    let predicted = apply(vectors, dims, rows);
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (p, r) in predicted.iter().zip(rows) {
        num += p.iter().zip(&r.target).map(|(a, b)| (*a as f64) * (*b as f64)).sum::<f64>();
        den += p.iter().map(|a| (*a as f64).powi(2)).sum::<f64>();
    }
    let scale = if den > 0.0 { (num / den) as f32 } else { 1.0 };
    vectors.iter_mut().for_each(|v| *v *= scale);
    let before = error(vectors, dims, rows) / n;

    // r = b − M e with b = AᵀY + λE₀ and M = AᵀA + λI; at e = E₀: r = Aᵀ(Y − A E₀).
    let mut residual = vec![0.0f32; vocab * dims];
    let predicted = apply(vectors, dims, rows);
    let gaps: Vec<Vec<f32>> =
        predicted.iter().zip(rows).map(|(p, r)| r.target.iter().zip(p).map(|(y, a)| y - a).collect()).collect();
    apply_transposed(&gaps, dims, rows, &mut residual);
    let mut direction = residual.clone();
    let mut rr = column_dots(&residual, &residual, dims);
    for _ in 0..iterations {
        // M p = Aᵀ(A p) + λ p
        let ap = apply(&direction, dims, rows);
        let mut mp = vec![0.0f32; vocab * dims];
        apply_transposed(&ap, dims, rows, &mut mp);
        mp.iter_mut().zip(&direction).for_each(|(m, p)| *m += lambda as f32 * p);
        let pmp = column_dots(&direction, &mp, dims);
        let alpha: Vec<f32> = rr.iter().zip(&pmp).map(|(r, q)| if *q > 0.0 { (r / q) as f32 } else { 0.0 }).collect();
        for (((v, r), p), m) in vectors
            .chunks_exact_mut(dims)
            .zip(residual.chunks_exact_mut(dims))
            .zip(direction.chunks_exact(dims))
            .zip(mp.chunks_exact(dims))
        {
            for (d, a) in alpha.iter().enumerate() {
                v[d] += a * p[d];
                r[d] -= a * m[d];
            }
        }
        let rr_next = column_dots(&residual, &residual, dims);
        let beta: Vec<f32> =
            rr_next.iter().zip(&rr).map(|(a, b)| if *b > 0.0 { (a / b) as f32 } else { 0.0 }).collect();
        for (p, r) in direction.chunks_exact_mut(dims).zip(residual.chunks_exact(dims)) {
            for (d, b) in beta.iter().enumerate() {
                p[d] = r[d] + b * p[d];
            }
        }
        rr = rr_next;
    }
    (before, error(vectors, dims, rows) / n)
}

/// A E: each row's weighted sum of its pieces' vectors.
fn apply(vectors: &[f32], dims: usize, rows: &[Row]) -> Vec<Vec<f32>> {
    rows.iter()
        .map(|r| {
            let mut out = vec![0.0f32; dims];
            for (id, w) in &r.pieces {
                let v = &vectors[*id as usize * dims..(*id as usize + 1) * dims];
                out.iter_mut().zip(v).for_each(|(o, x)| *o += w * x);
            }
            out
        })
        .collect()
}

/// out += Aᵀ G: each piece gathers its rows' values, weighted.
fn apply_transposed(values: &[Vec<f32>], dims: usize, rows: &[Row], out: &mut [f32]) {
    for (g, r) in values.iter().zip(rows) {
        for (id, w) in &r.pieces {
            let o = &mut out[*id as usize * dims..(*id as usize + 1) * dims];
            o.iter_mut().zip(g).for_each(|(o, x)| *o += w * x);
        }
    }
}

/// Per output dimension, Σ over pieces of a·b.
fn column_dots(a: &[f32], b: &[f32], dims: usize) -> Vec<f64> {
    let mut out = vec![0.0f64; dims];
    for (ra, rb) in a.chunks_exact(dims).zip(b.chunks_exact(dims)) {
        for d in 0..dims {
            out[d] += ra[d] as f64 * rb[d] as f64;
        }
    }
    out
}

/// Σ over rows of ‖A E − Y‖².
fn error(vectors: &[f32], dims: usize, rows: &[Row]) -> f64 {
    apply(vectors, dims, rows)
        .iter()
        .zip(rows)
        .map(|(p, r)| p.iter().zip(&r.target).map(|(a, b)| ((a - b) as f64).powi(2)).sum::<f64>())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_vectors_that_explain_the_targets() {
        // Three pieces in 2 dims; the truth is e0 = (1,0), e1 = (0,1), e2 = (1,1); texts mix them.
        let truth = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0];
        let mixes: [&[(u32, f32)]; 4] =
            [&[(0, 0.5), (1, 0.5)], &[(1, 0.5), (2, 0.5)], &[(0, 0.25), (2, 0.75)], &[(0, 1.0)]];
        let rows: Vec<Row> = mixes
            .iter()
            .map(|m| {
                let mut target = vec![0.0f32; 2];
                for (id, w) in m.iter() {
                    target[0] += w * truth[*id as usize * 2];
                    target[1] += w * truth[*id as usize * 2 + 1];
                }
                Row { pieces: m.to_vec(), target }
            })
            .collect();
        let mut vectors = vec![0.3f32, 0.1, 0.2, 0.4, 0.1, 0.1];
        let (before, after) = fit(&mut vectors, 2, &rows, 1e-6, 50);
        assert!(after < before * 1e-3 && after < 1e-6, "error {before} → {after}");
        for (v, t) in vectors.iter().zip(truth) {
            assert!((v - t).abs() < 1e-2, "{vectors:?}");
        }
    }

    #[test]
    fn a_piece_no_text_holds_keeps_its_start_up_to_scale() {
        let rows = vec![Row { pieces: vec![(0, 1.0)], target: vec![2.0, 0.0] }];
        let mut vectors = vec![1.0f32, 0.0, 0.0, 3.0];
        fit(&mut vectors, 2, &rows, 0.1, 20);
        // Scale fitted to 2 (piece 0 → (2, 0)); piece 1 is scaled and never moved after.
        assert!((vectors[0] - 2.0).abs() < 1e-4 && vectors[1].abs() < 1e-4, "{vectors:?}");
        assert!(vectors[2].abs() < 1e-6 && (vectors[3] - 6.0).abs() < 1e-4, "{vectors:?}");
    }
}
