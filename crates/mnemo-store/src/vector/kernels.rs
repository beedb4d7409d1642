//! The two inner loops of a dense search, over many rows at once: int8 code dots (the IVF
//! lists' scan) and `f32` dots (centroid scoring: probe order and filing vectors).
//!
//! Why compiled twice: the build targets baseline x86-64 (SSE2), where the int8 dot has no
//! wide multiply-add and the `f32` dot works 4 lanes at a time; this machine class has AVX2.
//! The same plain `f32` loop is compiled a second time with AVX2 enabled, and the int8 loop has
//! an AVX2 copy in intrinsics; the AVX2 copies are chosen at run time when the CPU has it (other
//! CPUs keep the portable copy). Every copy computes the same numbers: the int8 dots are exact
//! integers, and the `f32` dots
//! keep the order of [`dot`](super::dot) (8 lanes, each summed in dimension order, then the
//! lanes in order, then the tail; no fused multiply-add), so a vector is filed under the same
//! centroid and a search returns the same rows on every CPU.
//!
//! Several rows at a time: the `f32` loop scores [`F32_ROWS`] rows per pass over the query,
//! independent sums that keep the adder busy where one row's sum waits on its last add.
//!
//! The int8 loop's AVX2 copy is written with intrinsics (see `avx2::dots_i8`), and it has a
//! third copy for CPUs with AVX-512 VNNI (`vpdpbusd`: 64 byte products
//! summed into 16 `i32` lanes per instruction), written with intrinsics: measured on the
//! IVF's scan at 100k × 256 dims (118 lists of ~98 rows out of cache), 0.14–0.16 ms per search
//! against 0.36–0.37 ms for the AVX2 copy of that time (the plain loop compiled for AVX2).
//! `vpdpbusd` multiplies unsigned by signed bytes, so each row's codes are shifted by 128 (`a + 128`, an `xor` of the sign bit) and `128 · Σq`
//! taken off again: `Σ (a+128)·q − 128·Σq = Σ a·q`. The sums wrap in `i32` as the others do,
//! and the true dot fits an `i32`, so the result is the same integer exactly.

/// `f32` rows scored together.
const F32_ROWS: usize = 4;

/// Which copy of the loops runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Baseline instructions (any CPU).
    Portable,
    /// AVX2 (x86-64 CPUs that have it).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX-512 VNNI for the int8 loop (and the AVX2 copy of the `f32` loop).
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
}

impl Kernel {
    /// The fastest copy this CPU runs (the answer is cached by the standard library).
    #[inline]
    pub(crate) fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            if has_vnni() {
                return Kernel::Avx512Vnni;
            }
            return Kernel::Avx2;
        }
        Kernel::Portable
    }

    /// Every copy this CPU runs (for tests).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Kernel> {
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut v = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                v.push(Kernel::Avx2);
            }
            if std::is_x86_feature_detected!("avx2") && has_vnni() {
                v.push(Kernel::Avx512Vnni);
            }
        }
        v
    }
}

/// Whether this CPU runs the AVX-512 VNNI copy (the features `vnni::dots_i8` is compiled with).
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_vnni() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vnni")
}

/// `out[r] = Σ rows[r·d + i] · q[i]` for every row of `rows` (rows of `d = q.len()` codes).
#[inline]
pub(crate) fn dots_i8(rows: &[i8], q: &[i8], out: &mut [i32]) {
    dots_i8_with(Kernel::best(), rows, q, out);
}

/// `out[r]` = the dot of row `r` of `rows` with `q`, as [`dot`](super::dot) computes it.
#[inline]
pub(crate) fn dots_f32(rows: &[f32], q: &[f32], out: &mut [f32]) {
    dots_f32_with(Kernel::best(), rows, q, out);
}

/// [`dots_i8`] by the given copy (which must be one that this CPU runs: see [`Kernel::best`]).
pub(crate) fn dots_i8_with(kernel: Kernel, rows: &[i8], q: &[i8], out: &mut [i32]) {
    // Every copy fills `out` only as far as whole rows go (the VNNI one by groups of 4 first).
    debug_assert_eq!(out.len(), rows.len() / q.len().max(1), "one output per row");
    match kernel {
        Kernel::Portable => dots_i8_body(rows, q, out),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => {
            // SAFETY: `Kernel::Avx2` is only chosen (`Kernel::best`) when
            // `is_x86_feature_detected!("avx2")` said this CPU has AVX2, which is all that
            // `avx2::dots_i8` requires; it is otherwise safe code over slices.
            #[allow(unsafe_code)]
            unsafe {
                avx2::dots_i8(rows, q, out)
            }
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512Vnni => {
            // SAFETY: `Kernel::Avx512Vnni` is only chosen when `has_vnni` found every feature
            // `vnni::dots_i8` is compiled with; its loads stay within the slices (see there).
            #[allow(unsafe_code)]
            unsafe {
                vnni::dots_i8(rows, q, out)
            }
        }
    }
}

/// [`dots_f32`] by the given copy (which must be one that this CPU runs).
pub(crate) fn dots_f32_with(kernel: Kernel, rows: &[f32], q: &[f32], out: &mut [f32]) {
    match kernel {
        Kernel::Portable => dots_f32_body(rows, q, out),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 | Kernel::Avx512Vnni => {
            // SAFETY: as in `dots_i8_with`: chosen only when the CPU has AVX2 (both kinds).
            #[allow(unsafe_code)]
            unsafe {
                avx2::dots_f32(rows, q, out)
            }
        }
    }
}

/// `$load` (an unaligned load intrinsic) of the `$n` codes of the slice `$p` at `$j`; the
/// callers keep `$j + $n <= whole`, and `whole` is at most the length of `q` and of every row.
#[cfg(target_arch = "x86_64")]
macro_rules! load_at {
    ($load:ident, $p:expr, $j:expr, $n:expr) => {{
        let (p, j): (&[i8], usize) = ($p, $j);
        debug_assert!(j + $n <= p.len());
        // SAFETY: `j + n <= p.len()`: the bytes read are within the slice.
        #[allow(unsafe_code)]
        unsafe {
            $load(p.as_ptr().add(j).cast())
        }
    }};
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, _mm256_add_epi32, _mm256_castsi256_si128, _mm256_cvtepi8_epi16, _mm256_extracti128_si256,
        _mm256_hadd_epi32, _mm256_madd_epi16, _mm256_setzero_si256, _mm_add_epi32, _mm_loadu_si128, _mm_storeu_si128,
    };

    /// Codes one widening load takes.
    const LANES: usize = 16;
    /// Rows summed together (independent accumulators sharing the widened query).
    const ROWS: usize = 4;

    /// The 16 codes of `$p` at `$j` widened to 16 `i16`.
    macro_rules! widen {
        ($p:expr, $j:expr) => {
            _mm256_cvtepi8_epi16(load_at!(_mm_loadu_si128, $p, $j, LANES))
        };
    }

    /// The int8 loop with AVX2 intrinsics: 16 codes of a row widened to `i16` and multiplied
    /// with the query's by `vpmaddwd` (pairs summed into 8 `i32` lanes; a pair is at most
    /// 2 · 128², which fits), [`ROWS`] rows per pass, each of the query's widened codes used
    /// for all of them (the plain loop compiled for AVX2 widened the query again for every row
    /// and summed each row's lanes alone); the last rows short of [`ROWS`] by the plain loop.
    /// Measured on a CPU without AVX-512 (`bench scale --dense-only`, 100k, 8 probes): a search
    /// 0.53 → 0.29 ms p50, most of it the probe order's 1,024 centroid codes, which stay in
    /// cache; a full scan out of cache is bound by memory and did not change (4.5 ms). Exact
    /// integers, as every copy.
    #[target_feature(enable = "avx2")]
    pub(super) fn dots_i8(rows: &[i8], q: &[i8], out: &mut [i32]) {
        let d = q.len().max(1);
        let whole = q.len() / LANES * LANES;
        let tail =
            |row: &[i8]| -> i32 { row[whole..].iter().zip(&q[whole..]).map(|(&a, &b)| a as i32 * b as i32).sum() };
        let mut outs = out.chunks_exact_mut(ROWS);
        let mut groups = rows.chunks_exact(d * ROWS);
        for (o, g) in (&mut outs).zip(&mut groups) {
            let r: [&[i8]; ROWS] = [&g[..d], &g[d..2 * d], &g[2 * d..3 * d], &g[3 * d..]];
            let mut acc = [_mm256_setzero_si256(); ROWS];
            for j in (0..whole).step_by(LANES) {
                let qv = widen!(q, j);
                for (a, row) in acc.iter_mut().zip(&r) {
                    *a = _mm256_add_epi32(*a, _mm256_madd_epi16(widen!(row, j), qv));
                }
            }
            // Per 128-bit half, two rounds of pairwise adds leave row i's partial sum in
            // lane i; the halves added give the four sums in row order.
            let h = _mm256_hadd_epi32(_mm256_hadd_epi32(acc[0], acc[1]), _mm256_hadd_epi32(acc[2], acc[3]));
            let sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
            let mut four = [0i32; ROWS];
            // SAFETY: `four` is 16 writable bytes, what one unaligned 128-bit store writes.
            #[allow(unsafe_code)]
            unsafe {
                _mm_storeu_si128(four.as_mut_ptr().cast::<__m128i>(), sums)
            };
            for ((o, s), row) in o.iter_mut().zip(four).zip(&r) {
                *o = s.wrapping_add(tail(row));
            }
        }
        super::dots_i8_body(groups.remainder(), q, outs.into_remainder());
    }

    /// The `f32` loop compiled with AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) fn dots_f32(rows: &[f32], q: &[f32], out: &mut [f32]) {
        super::dots_f32_body(rows, q, out)
    }
}

#[cfg(target_arch = "x86_64")]
mod vnni {
    use std::arch::x86_64::{
        _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_reduce_add_epi32, _mm512_set1_epi8, _mm512_setzero_si512,
        _mm512_xor_si512,
    };

    /// Bytes one instruction takes.
    const LANES: usize = 64;
    /// Rows summed together (independent accumulators).
    const ROWS: usize = 4;

    /// The 64 codes of `$p` at `$j`.
    macro_rules! load {
        ($p:expr, $j:expr) => {
            load_at!(_mm512_loadu_si512, $p, $j, LANES)
        };
    }

    /// The int8 loop with `vpdpbusd` (see the module docs for the shift by 128). Rows are
    /// taken [`ROWS`] at a time; the dimensions past the last whole 64 are summed plainly.
    /// Callers must only call it on a CPU with AVX-512F, AVX-512BW and AVX-512 VNNI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) fn dots_i8(rows: &[i8], q: &[i8], out: &mut [i32]) {
        let d = q.len().max(1);
        let whole = q.len() / LANES * LANES;
        let q_sum: i32 = q[..whole].iter().map(|&b| b as i32).sum();
        let offset = q_sum.wrapping_mul(128);
        let flip = _mm512_set1_epi8(i8::MIN);
        let tail =
            |row: &[i8]| -> i32 { row[whole..].iter().zip(&q[whole..]).map(|(&a, &b)| a as i32 * b as i32).sum() };
        let mut outs = out.chunks_exact_mut(ROWS);
        let mut groups = rows.chunks_exact(d * ROWS);
        for (o, g) in (&mut outs).zip(&mut groups) {
            let r: [&[i8]; ROWS] = [&g[..d], &g[d..2 * d], &g[2 * d..3 * d], &g[3 * d..]];
            let mut acc = [_mm512_setzero_si512(); ROWS];
            let mut j = 0;
            while j < whole {
                let b = load!(q, j);
                for (a, row) in acc.iter_mut().zip(&r) {
                    *a = _mm512_dpbusd_epi32(*a, _mm512_xor_si512(load!(row, j), flip), b);
                }
                j += LANES;
            }
            for ((o, a), row) in o.iter_mut().zip(&acc).zip(&r) {
                *o = _mm512_reduce_add_epi32(*a).wrapping_sub(offset).wrapping_add(tail(row));
            }
        }
        for (o, row) in outs.into_remainder().iter_mut().zip(groups.remainder().chunks_exact(d)) {
            let mut acc = _mm512_setzero_si512();
            let mut j = 0;
            while j < whole {
                acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(load!(row, j), flip), load!(q, j));
                j += LANES;
            }
            *o = _mm512_reduce_add_epi32(acc).wrapping_sub(offset).wrapping_add(tail(row));
        }
    }
}

/// The portable int8 loop (the copies in intrinsics give the same integers). Integer sums:
/// any order gives the same result, so the compiler may vectorise it as it likes. At most
/// 127² · d: fits an `i32` up to 133k dimensions.
#[inline(always)]
fn dots_i8_body(rows: &[i8], q: &[i8], out: &mut [i32]) {
    let d = q.len().max(1);
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(d)) {
        *o = row.iter().zip(q).map(|(&a, &b)| a as i32 * b as i32).sum();
    }
}

/// The `f32` loop (inlined into each copy): [`F32_ROWS`] rows per pass, each summed as
/// [`dot`](super::dot) sums it.
#[inline(always)]
fn dots_f32_body(rows: &[f32], q: &[f32], out: &mut [f32]) {
    let d = q.len().max(1);
    let whole = d / 8 * 8;
    let (qc, qt) = q.split_at(whole);
    let mut outs = out.chunks_exact_mut(F32_ROWS);
    let mut groups = rows.chunks_exact(d * F32_ROWS);
    for (o, g) in (&mut outs).zip(&mut groups) {
        let mut acc = [[0f32; 8]; F32_ROWS];
        for (j, qx) in qc.chunks_exact(8).enumerate() {
            for (r, a) in acc.iter_mut().enumerate() {
                let x = &g[r * d + j * 8..r * d + j * 8 + 8];
                for i in 0..8 {
                    a[i] += x[i] * qx[i];
                }
            }
        }
        for (r, (a, o)) in acc.iter().zip(o.iter_mut()).enumerate() {
            let row = &g[r * d..(r + 1) * d];
            *o = finish(a, &row[whole..], qt);
        }
    }
    for (o, row) in outs.into_remainder().iter_mut().zip(groups.remainder().chunks_exact(d)) {
        *o = super::dot(row, q);
    }
}

/// The lanes summed in order, plus the tail (as [`dot`](super::dot) ends).
#[inline(always)]
fn finish(acc: &[f32; 8], row_tail: &[f32], q_tail: &[f32]) -> f32 {
    let tail: f32 = row_tail.iter().zip(q_tail).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::super::{dot, pseudo};
    use super::*;
    use crate::vector::code::Code;

    #[test]
    fn every_kernel_gives_the_portable_dots_exactly() {
        // Odd dimensions and row counts exercise the tails (dims % 8, rows % F32_ROWS).
        for d in [1usize, 7, 8, 19, 64, 256, 259, 384] {
            let q = pseudo(d as u64, d);
            let qc = Code::of(&q);
            let n = 13;
            let mut rows = Vec::new();
            let mut codes = Vec::new();
            for i in 0..n {
                let v = pseudo(100 + i, d);
                codes.extend(Code::of(&v).codes);
                rows.extend(v);
            }
            let want_f32: Vec<f32> = rows.chunks_exact(d).map(|r| dot(r, &q)).collect();
            let want_i8: Vec<i32> = codes
                .chunks_exact(d)
                .map(|r| r.iter().zip(&qc.codes).map(|(&a, &b)| a as i32 * b as i32).sum())
                .collect();
            for k in Kernel::available() {
                let mut got = vec![0f32; n as usize];
                dots_f32_with(k, &rows, &q, &mut got);
                let same = got.iter().zip(&want_f32).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{k:?}, {d} dims: {got:?} vs {want_f32:?}");
                let mut got = vec![0i32; n as usize];
                dots_i8_with(k, &codes, &qc.codes, &mut got);
                assert_eq!(got, want_i8, "{k:?}, {d} dims");
            }
        }
        // Extreme codes: ±127 everywhere (the largest sums), over 5 rows (a group of 4 and one
        // more); and -128, which quantising never gives but the loops must take exactly too.
        let (a, b) = (vec![127i8; 5 * 256], vec![-127i8; 256]);
        for k in Kernel::available() {
            let mut got = [0i32; 5];
            dots_i8_with(k, &a, &b, &mut got);
            assert_eq!(got, [-127 * 127 * 256; 5], "{k:?}");
        }
        let d = 200;
        let rows: Vec<i8> = (0..9 * d).map(|i| [i8::MIN, 127, -1, 0, 5][i % 5]).collect();
        let q: Vec<i8> = (0..d).map(|i| [i8::MIN, -127, 127, 3][i % 4]).collect();
        let want: Vec<i32> =
            rows.chunks_exact(d).map(|r| r.iter().zip(&q).map(|(&a, &b)| a as i32 * b as i32).sum()).collect();
        for k in Kernel::available() {
            let mut got = vec![0i32; 9];
            dots_i8_with(k, &rows, &q, &mut got);
            assert_eq!(got, want, "{k:?} with -128");
        }
    }
}
