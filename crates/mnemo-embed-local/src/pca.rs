//! Principal components of a set of row vectors: the covariance matrix and its eigenvectors by
//! cyclic Jacobi rotations. Small and exact enough for a few hundred dimensions (the static
//! model's distillation runs it once); no linear-algebra crate needed for one call.

/// The mean row and the top `k` principal directions (unit vectors, by decreasing variance) of
/// `rows` (`n` rows of `dims` values, row-major).
pub(crate) struct Components {
    /// The mean of the rows.
    pub(crate) mean: Vec<f64>,
    /// `k` directions, each `dims` long.
    pub(crate) directions: Vec<Vec<f64>>,
    /// The variance along each direction.
    pub(crate) variances: Vec<f64>,
    /// The total variance (over every direction).
    pub(crate) total_variance: f64,
}

/// The mean of the rows of `data` (`dims` values each) that `keep` selects.
pub(crate) fn mean_of_rows(data: &[f32], dims: usize, keep: &[bool]) -> Vec<f64> {
    let mut n = 0usize;
    let mut mean = vec![0.0f64; dims];
    for (r, _) in data.chunks_exact(dims).zip(keep).filter(|(_, k)| **k) {
        n += 1;
        for (m, x) in mean.iter_mut().zip(r) {
            *m += *x as f64;
        }
    }
    mean.iter_mut().for_each(|m| *m /= n.max(1) as f64);
    mean
}

/// Principal components of the rows of `data` that `keep` selects.
pub(crate) fn principal_components(data: &[f32], dims: usize, keep: &[bool], k: usize) -> Components {
    let rows = || data.chunks_exact(dims).zip(keep).filter(|(_, k)| **k).map(|(r, _)| r);
    let n = rows().count().max(1) as f64;
    let mean = mean_of_rows(data, dims, keep);
    // Upper triangle of the covariance, then mirrored.
    let mut cov = vec![0.0f64; dims * dims];
    let mut centred = vec![0.0f64; dims];
    for r in rows() {
        for ((c, x), m) in centred.iter_mut().zip(r).zip(&mean) {
            *c = *x as f64 - m;
        }
        for i in 0..dims {
            let ci = centred[i];
            let row = &mut cov[i * dims..(i + 1) * dims];
            for j in i..dims {
                row[j] += ci * centred[j];
            }
        }
    }
    for i in 0..dims {
        for j in i..dims {
            let v = cov[i * dims + j] / n;
            cov[i * dims + j] = v;
            cov[j * dims + i] = v;
        }
    }
    let total_variance = (0..dims).map(|i| cov[i * dims + i]).sum();
    let (values, vectors) = symmetric_eigen(cov, dims);
    let mut order: Vec<usize> = (0..dims).collect();
    order.sort_by(|a, b| values[*b].total_cmp(&values[*a]));
    let k = k.min(dims);
    Components {
        mean,
        directions: order[..k].iter().map(|&c| (0..dims).map(|r| vectors[r * dims + c]).collect()).collect(),
        variances: order[..k].iter().map(|&c| values[c]).collect(),
        total_variance,
    }
}

/// Eigenvalues and eigenvectors (as the columns of a row-major matrix) of the symmetric `n`×`n`
/// matrix `a`, by cyclic Jacobi sweeps until the off-diagonal mass is negligible.
fn symmetric_eigen(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0.0f64; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let total: f64 = a.iter().map(|x| x * x).sum::<f64>().max(f64::MIN_POSITIVE);
    for _sweep in 0..60 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |j| *j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j].powi(2))
            .sum();
        if off <= total * 1e-22 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() <= f64::MIN_POSITIVE {
                    continue;
                }
                let app = a[p * n + p];
                let aqq = a[q * n + q];
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                // A ← Jᵀ A J on rows/columns p and q.
                for k in 0..n {
                    let akp = a[k * n + p];
                    let akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let apk = a[p * n + k];
                    let aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let vkp = v[k * n + p];
                    let vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_component_of_points_on_a_line_is_the_line() {
        // Points along (3, 4)/5 with a little noise across it.
        let mut data = Vec::new();
        for i in 0..50 {
            let t = i as f32 - 25.0;
            let noise = if i % 2 == 0 { 0.1 } else { -0.1 };
            data.extend([0.6 * t - 0.8 * noise + 1.0, 0.8 * t + 0.6 * noise - 2.0]);
        }
        let c = principal_components(&data, 2, &[true; 50], 2);
        assert!((c.mean[0] - (0.6 * -0.5 + 1.0)).abs() < 1e-6, "mean {:?}", c.mean);
        let d = &c.directions[0];
        assert!((d[0].abs() - 0.6).abs() < 1e-3 && (d[1].abs() - 0.8).abs() < 1e-3, "direction {d:?}");
        assert!(c.variances[0] > 100.0 * c.variances[1], "variances {:?}", c.variances);
    }

    #[test]
    fn eigenvectors_diagonalise_a_symmetric_matrix() {
        let a = vec![4.0, 1.0, 2.0, 1.0, 3.0, 0.5, 2.0, 0.5, 1.0];
        let (values, v) = symmetric_eigen(a.clone(), 3);
        for c in 0..3 {
            for r in 0..3 {
                let av: f64 = (0..3).map(|k| a[r * 3 + k] * v[k * 3 + c]).sum();
                assert!((av - values[c] * v[r * 3 + c]).abs() < 1e-9, "column {c} row {r}");
            }
        }
        let trace: f64 = values.iter().sum();
        assert!((trace - 8.0).abs() < 1e-9);
    }

    #[test]
    fn rows_not_kept_do_not_count() {
        let data = vec![1.0, 0.0, -1.0, 0.0, 100.0, 100.0];
        let c = principal_components(&data, 2, &[true, true, false], 1);
        assert_eq!(c.mean, vec![0.0, 0.0]);
        assert!((c.directions[0][0].abs() - 1.0).abs() < 1e-9);
    }
}
