//! How a memory's embedding is kept in its row: the `embedding` BLOB and the
//! `embedding_codec` that says how to read it.
//!
//! - codec 1 (every row written since schema version 4): int8 — a little-endian `f32` scale,
//!   then one signed byte per component (`x ≈ scale · code`, the largest |x| mapped to 127),
//!   the same quantisation the index uses for its codes. 260 bytes for 256 dimensions instead
//!   of 1,024; each component comes back within half a step (1/254 of the largest |x|), the
//!   tolerance the Store contract allows (`EMBEDDING_STORE_TOLERANCE`). Deterministic: the
//!   same vector always gives the same bytes, and re-storing a decoded vector gives the same
//!   codes, so a rebuilt index files the same codes as before.
//! - NULL (rows written before version 4): little-endian `f32`, bit-exact. Such rows are read
//!   as they are and never rewritten (nothing rewrites an embedding).
use crate::vector::code::{decode_into, quantise_into};

/// `embedding_codec` of an int8 embedding.
pub(crate) const CODEC_INT8: i64 = 1;

/// Bytes of the int8 blob's scale.
const SCALE_BYTES: usize = 4;

/// The int8 blob of `v`; an error (naming the component) for a non-finite component or a
/// vector too large for its scale to be decoded.
pub(crate) fn encode(v: &[f32]) -> Result<Vec<u8>, String> {
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(format!("component {i} of the embedding is {}, not a finite number", v[i]));
    }
    let mut codes = Vec::with_capacity(v.len());
    let scale = quantise_into(v, &mut codes);
    if !(scale * 127.0).is_finite() {
        return Err(format!("the embedding's largest component ({}) is too large to store", scale * 127.0));
    }
    let mut out = Vec::with_capacity(SCALE_BYTES + v.len());
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend(codes.iter().map(|&c| c as u8));
    Ok(out)
}

/// The vector a row's blob stands for, read by its codec; an error saying what is wrong.
pub(crate) fn decode(codec: Option<i64>, bytes: &[u8]) -> Result<Vec<f32>, String> {
    match codec {
        None => decode_f32(bytes),
        Some(CODEC_INT8) => {
            let (scale, codes) = bytes
                .split_first_chunk::<SCALE_BYTES>()
                .ok_or_else(|| format!("{} bytes is too short for an int8 embedding", bytes.len()))?;
            let scale = f32::from_le_bytes(*scale);
            if !scale.is_finite() || scale < 0.0 {
                return Err(format!("the int8 embedding's scale {scale} is not a finite non-negative number"));
            }
            let codes: Vec<i8> = codes.iter().map(|&b| b as i8).collect();
            let mut out = Vec::with_capacity(codes.len());
            decode_into(&codes, scale, &mut out);
            Ok(out)
        }
        Some(other) => Err(format!("unknown embedding_codec {other}")),
    }
}

/// Little-endian `f32` (the rows written before schema version 4), bit-exact.
fn decode_f32(bytes: &[u8]) -> Result<Vec<f32>, String> {
    let chunks = bytes.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return Err(format!("{} bytes is not a whole number of f32", bytes.len()));
    }
    Ok(chunks.map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Little-endian `f32` bytes of `v`: how rows were written before schema version 4 (tests
/// build such rows).
#[cfg(test)]
pub(crate) fn encode_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use mnemo_contract::Embedding;

    use super::*;

    #[test]
    fn int8_round_trip_is_within_the_contracts_tolerance_and_a_quarter_of_the_bytes() {
        for seed in 0..50 {
            let v = crate::vector::pseudo(seed, 256);
            let blob = encode(&v).unwrap();
            assert_eq!(blob.len(), 260, "a scale and one byte per component");
            let back = decode(Some(CODEC_INT8), &blob).unwrap();
            let (a, b) =
                (Embedding { model: "m".into(), vector: v.clone() }, Embedding { model: "m".into(), vector: back });
            assert!(a.within_store_tolerance(&b), "seed {seed}");
            assert_eq!(encode(&v).unwrap(), blob, "deterministic");
        }
    }

    #[test]
    fn re_storing_a_decoded_vector_keeps_its_codes() {
        for seed in 0..50 {
            let blob = encode(&crate::vector::pseudo(seed, 256)).unwrap();
            let again = encode(&decode(Some(CODEC_INT8), &blob).unwrap()).unwrap();
            assert_eq!(blob[SCALE_BYTES..], again[SCALE_BYTES..], "seed {seed}: the codes");
            let scale = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            assert!((scale(&blob) - scale(&again)).abs() <= scale(&blob) * 1e-6, "seed {seed}: the scale");
        }
    }

    #[test]
    fn zero_and_empty_vectors_are_exact() {
        assert_eq!(decode(Some(CODEC_INT8), &encode(&[0.0; 3]).unwrap()).unwrap(), vec![0.0; 3]);
        assert_eq!(decode(Some(CODEC_INT8), &encode(&[]).unwrap()).unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn old_f32_rows_read_bit_exactly() {
        let v = [0.0f32, -0.0, f32::NAN, 1.0 / 3.0, f32::MIN_POSITIVE / 2.0, -7.5e30];
        let back = decode(None, &encode_f32(&v)).unwrap();
        assert_eq!(v.map(f32::to_bits).to_vec(), back.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    }

    #[test]
    fn bad_input_and_damaged_blobs_are_errors_saying_what_is_wrong() {
        assert!(encode(&[0.1, f32::NAN]).unwrap_err().contains("component 1"));
        assert!(encode(&[f32::INFINITY]).unwrap_err().contains("component 0"));
        // The largest finite values: refused, or stored so that they decode finite.
        match encode(&[f32::MAX, -f32::MAX]) {
            Err(e) => assert!(e.contains("too large"), "{e}"),
            Ok(b) => assert!(decode(Some(CODEC_INT8), &b).unwrap().iter().all(|x| x.is_finite())),
        }
        assert!(decode(None, &[1, 2, 3]).unwrap_err().contains("whole number of f32"));
        assert!(decode(Some(CODEC_INT8), &[1, 2, 3]).unwrap_err().contains("too short"));
        let nan_scale = f32::NAN.to_le_bytes();
        assert!(decode(Some(CODEC_INT8), &nan_scale).unwrap_err().contains("scale"));
        assert!(decode(Some(7), &[0; 8]).unwrap_err().contains("unknown embedding_codec 7"));
    }
}
