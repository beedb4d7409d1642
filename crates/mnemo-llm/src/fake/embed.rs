//! The fake's embeddings: a hashed bag of words projected onto a fixed-dimension unit vector.
//!
//! For each text:
//! 1. Words are `mnemo_contract::text::words` (lower-cased maximal alphanumeric runs); stop words
//!    (`mnemo_contract::text::is_stopword`) are dropped.
//! 2. Each distinct word adds `1 + ln(tf)` (sublinear term frequency) to one dimension with one
//!    sign, both taken from a stable 64-bit hash of the word (FNV-1a, then a mixer; never std's
//!    randomised hasher, so vectors are the same in every process).
//! 3. Each distinct word also adds its character trigrams (with word-boundary marks, so
//!    "supplier" and "suppliers" share 7 of their 8 and 9 trigrams), each hashed the same way,
//!    with a smaller weight: the word's trigrams together weigh `TRIGRAM_WEIGHT × (1 + ln tf)`
//!    in norm, whatever the word's length.
//! 4. The vector is L2-normalised.
//!
//! A text with no content word (empty, punctuation, only stop words) gets a fixed unit vector:
//! the basis vector of the "empty" bucket. So every output is unit length; two empty texts are
//! identical (cosine 1) and an empty text is near-orthogonal to any other.
//!
//! Words with the same 64-bit hash are treated as one word (collisions are negligible).
//! Vectors are deterministic for a given text on a given platform.
//!
//! The hot loop allocates nothing per word for ASCII text (scratch buffers are reused across a
//! batch); a non-ASCII word costs one allocation for its Unicode lower-casing.

/// Total norm of one word's trigrams relative to the word itself.
pub const TRIGRAM_WEIGHT: f32 = 0.5;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
/// Salt that separates trigram features from word features.
const TRIGRAM_SALT: u64 = 0x7472_6967_7261_6d73; // "trigrams"
const BOUNDARY_START: char = '\u{2}';
const BOUNDARY_END: char = '\u{3}';

/// FNV-1a over bytes, from a given state.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The murmur3 64-bit finaliser: spreads FNV's weak high/low bits over the whole word.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// Stable hash of a (lower-cased) word.
pub fn word_hash(word: &str) -> u64 {
    fnv1a(FNV_OFFSET, word.as_bytes())
}

/// The dimension and sign a feature hash maps to.
fn slot(h: u64, dims: usize) -> (usize, f32) {
    let m = mix(h);
    // Multiply-shift maps the high 32 bits uniformly onto 0..dims without a division.
    let idx = (((m >> 32) * dims as u64) >> 32) as usize;
    let sign = if m & 1 == 1 { -1.0 } else { 1.0 };
    (idx.min(dims - 1), sign)
}

/// The fixed "empty" bucket: where a text with no content word lands.
pub fn empty_slot(dims: usize) -> (usize, f32) {
    slot(fnv1a(FNV_OFFSET, b"\0mnemo-empty-text"), dims)
}

/// Hashed bag-of-words embedder state: dimensions and the stop words' hashes (for a cheap
/// pre-check before the exact stop word comparison).
#[derive(Clone, Debug)]
pub struct HashEmbedder {
    dims: usize,
    stop_hashes: Vec<u64>,
}

/// Per-batch scratch space, reused across texts.
#[derive(Default)]
pub struct Scratch {
    lower: String,
    /// (word hash, start, end) into `lower`, one per content word occurrence.
    words: Vec<(u64, usize, usize)>,
}

impl HashEmbedder {
    /// An embedder of `dims` dimensions (the caller validates the range).
    pub fn new(dims: usize) -> Self {
        let mut stop_hashes: Vec<u64> = mnemo_contract::text::STOPWORDS.iter().map(|w| word_hash(w)).collect();
        stop_hashes.sort_unstable();
        stop_hashes.dedup();
        HashEmbedder { dims: dims.max(1), stop_hashes }
    }

    /// Dimensions.
    pub fn dims(&self) -> usize {
        self.dims
    }

    fn is_stop(&self, h: u64, word: &str) -> bool {
        self.stop_hashes.binary_search(&h).is_ok() && mnemo_contract::text::is_stopword(word)
    }

    /// Embed one text into a fresh unit vector, using `s` as scratch.
    pub fn embed_with(&self, text: &str, s: &mut Scratch) -> Vec<f32> {
        s.lower.clear();
        s.words.clear();
        // Same tokenisation as mnemo_contract::text::words, without a String per word.
        for raw in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            let start = s.lower.len();
            if raw.is_ascii() {
                s.lower.extend(raw.chars().map(|c| c.to_ascii_lowercase()));
            } else {
                s.lower.push_str(&raw.to_lowercase());
            }
            let word = &s.lower[start..];
            let h = word_hash(word);
            if self.is_stop(h, word) {
                s.lower.truncate(start);
            } else {
                s.words.push((h, start, s.lower.len()));
            }
        }
        let mut v = vec![0.0f32; self.dims];
        if s.words.is_empty() {
            let (i, sign) = empty_slot(self.dims);
            v[i] = sign;
            return v;
        }
        // Group occurrences by word (sorting also fixes the summation order: deterministic).
        s.words.sort_unstable();
        let mut i = 0;
        while i < s.words.len() {
            let (h, start, end) = s.words[i];
            let mut j = i + 1;
            while j < s.words.len() && s.words[j].0 == h {
                j += 1;
            }
            let weight = 1.0 + ((j - i) as f32).ln();
            let (d, sign) = slot(h, self.dims);
            v[d] += sign * weight;
            self.add_trigrams(&s.lower[start..end], weight, &mut v);
            i = j;
        }
        normalise(&mut v, self.dims);
        v
    }

    /// Add the boundary-marked character trigrams of `word`.
    fn add_trigrams(&self, word: &str, weight: f32, v: &mut [f32]) {
        let n = word.chars().count(); // n + 2 marked chars give n trigrams
        if n == 0 {
            return;
        }
        let w = TRIGRAM_WEIGHT * weight / (n as f32).sqrt();
        let mut win = [BOUNDARY_START; 3];
        let mut seen = 0usize;
        let marked = std::iter::once(BOUNDARY_START).chain(word.chars()).chain(std::iter::once(BOUNDARY_END));
        for c in marked {
            win = [win[1], win[2], c];
            seen += 1;
            if seen >= 3 {
                let mut h = TRIGRAM_SALT ^ FNV_OFFSET;
                for ch in win {
                    h = fnv1a(h, &u32::from(ch).to_le_bytes());
                }
                let (d, sign) = slot(h, self.dims);
                v[d] += sign * w;
            }
        }
    }
}

/// L2-normalise in place; a vector that cancelled out to zero (possible only through hash
/// collisions with opposite signs) falls back to the empty bucket, so the output is unit length.
fn normalise(v: &mut [f32], dims: usize) {
    let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if norm > 1e-12 {
        let inv = (1.0 / norm) as f32;
        v.iter_mut().for_each(|x| *x *= inv);
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
        let (i, sign) = empty_slot(dims);
        v[i] = sign;
    }
}

/// Cosine of two unit vectors (their dot product).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emb(text: &str) -> Vec<f32> {
        HashEmbedder::new(256).embed_with(text, &mut Scratch::default())
    }

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[test]
    fn hash_is_fnv1a() {
        // Published FNV-1a 64 test vectors: the hash must never change, or persisted vectors
        // stop matching new ones.
        assert_eq!(word_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(word_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(word_hash("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn plural_overlaps_through_trigrams() {
        let a = emb("supplier");
        let b = emb("suppliers");
        let c = emb("warehouse");
        assert!(cosine(&a, &b) > 0.1, "supplier/suppliers cosine {}", cosine(&a, &b));
        assert!(cosine(&a, &b) > cosine(&a, &c) + 0.1);
    }

    #[test]
    fn case_punctuation_and_stop_words_do_not_matter() {
        let a = emb("The lead time of S-208!");
        let b = emb("lead TIME s 208");
        assert!((cosine(&a, &b) - 1.0).abs() < 1e-5);
    }

    #[test]
    fn empty_and_stopword_texts_hit_the_empty_bucket() {
        let e = emb("");
        assert!((norm(&e) - 1.0).abs() < 1e-6);
        assert_eq!(e, emb("the of and ... !!"));
        assert_eq!(e.iter().filter(|x| **x != 0.0).count(), 1);
        assert!(cosine(&e, &emb("lead time")).abs() < 0.5);
    }

    #[test]
    fn sublinear_tf_weights_repeats_less_than_linearly() {
        // "buffer buffer buffer day": buffer's weight is 1 + ln 3 ≈ 2.1, not 3.
        let v = emb("buffer buffer buffer day");
        let buffer = emb("buffer");
        let day = emb("day");
        let (cb, cd) = (cosine(&v, &buffer), cosine(&v, &day));
        assert!(cb > cd, "repeated word dominates");
        let ratio = cb / cd;
        assert!(ratio > 1.6 && ratio < 2.6, "ratio {ratio} should be near 1 + ln 3");
    }

    #[test]
    fn non_ascii_is_lowercased_like_core_words() {
        let a = emb("GRÖSSE Straße");
        let b = emb("grösse straße");
        assert!((cosine(&a, &b) - 1.0).abs() < 1e-5);
    }

    #[test]
    fn tokenisation_matches_core_words() {
        let text = "Größe: IC-MC-44 from S-208, ΣΊΣΥΦΟΣ  東京タワー café's";
        let mut s = Scratch::default();
        let e = HashEmbedder::new(64);
        e.embed_with(text, &mut s);
        let mine: Vec<&str> = s.words.iter().map(|(_, a, b)| &s.lower[*a..*b]).collect();
        let mut core: Vec<String> = mnemo_contract::text::content_words(text);
        let mut mine: Vec<String> = mine.into_iter().map(String::from).collect();
        core.sort();
        mine.sort();
        assert_eq!(mine, core);
    }
}
