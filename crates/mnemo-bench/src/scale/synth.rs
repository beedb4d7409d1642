//! A deterministic synthetic corpus: pseudo-words grouped into topics, memories drawn from a
//! topic (with some background words), and embeddings = the normalised sum of fixed random
//! word vectors, so memories of a topic cluster as real ones do. The same function embeds
//! queries ([`SynthEmbedder`]), so recall exercises the real dense path. No model is called.
use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_core::Embedder;

/// SplitMix64: a small, fast, well-mixed deterministic generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
    /// Roughly normal (sum of uniforms), mean 0, variance 1.
    pub fn normalish(&mut self) -> f32 {
        ((0..4).map(|_| self.unit()).sum::<f64>() - 2.0) as f32 * 1.732
    }
}

const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ne", "su", "ra", "to", "vi", "pe", "zu", "an", "or", "el", "is", "um", "ba", "de", "fo", "gi",
    "hu", "ja", "ke", "ly", "wo",
];

/// The corpus model.
pub struct Corpus {
    /// The words.
    pub vocab: Vec<String>,
    word_ix: HashMap<String, usize>,
    /// Word vectors, `vocab.len() × dims`.
    vectors: Vec<f32>,
    /// Each topic's words.
    topics: Vec<Vec<usize>>,
    dims: usize,
    seed: u64,
}

impl Corpus {
    /// A corpus of `words` words, `topics` topics of `per_topic` words, `dims`-dimensional.
    pub fn new(seed: u64, dims: usize, words: usize, topics: usize, per_topic: usize) -> Self {
        let mut rng = Rng::new(seed);
        let mut vocab = Vec::with_capacity(words);
        let mut word_ix = HashMap::with_capacity(words);
        while vocab.len() < words {
            let n = 2 + rng.below(3);
            let w: String = (0..n).map(|_| SYLLABLES[rng.below(SYLLABLES.len())]).collect();
            if !word_ix.contains_key(&w) {
                word_ix.insert(w.clone(), vocab.len());
                vocab.push(w);
            }
        }
        let mut vectors = Vec::with_capacity(words * dims);
        for _ in 0..words {
            let v: Vec<f32> = (0..dims).map(|_| rng.normalish()).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            vectors.extend(v.iter().map(|x| x / n));
        }
        let topics = (0..topics).map(|_| (0..per_topic).map(|_| rng.below(words)).collect()).collect();
        Corpus { vocab, word_ix, vectors, topics, dims, seed }
    }

    /// Dimensions.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Memory `i`'s text: 8 to 19 words, 75% from its topic, the rest background.
    pub fn memory_text(&self, i: u64) -> String {
        let mut rng = Rng::new(self.seed.wrapping_mul(31).wrapping_add(i));
        let topic = &self.topics[rng.below(self.topics.len())];
        let n = 8 + rng.below(12);
        let words: Vec<&str> = (0..n)
            .map(|_| {
                let w = if rng.unit() < 0.75 { topic[rng.below(topic.len())] } else { rng.below(self.vocab.len()) };
                self.vocab[w].as_str()
            })
            .collect();
        words.join(" ")
    }

    /// Query `i`: 3 to 5 words of one topic.
    pub fn query_text(&self, i: u64) -> String {
        let mut rng = Rng::new(self.seed.wrapping_mul(7919).wrapping_add(i).wrapping_add(1 << 40));
        let topic = &self.topics[rng.below(self.topics.len())];
        let n = 3 + rng.below(3);
        (0..n).map(|_| self.vocab[topic[rng.below(topic.len())]].as_str()).collect::<Vec<_>>().join(" ")
    }

    /// The embedding of a text: normalised sum of its known words' vectors.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dims];
        for w in text.split_whitespace() {
            if let Some(&ix) = self.word_ix.get(w) {
                let row = &self.vectors[ix * self.dims..(ix + 1) * self.dims];
                for (a, b) in v.iter_mut().zip(row) {
                    *a += b;
                }
            }
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n > 0.0 {
            v.iter_mut().for_each(|x| *x /= n);
        } else {
            v[0] = 1.0;
        }
        v
    }
}

/// The corpus's embedding function as an `Embedder` (for queries at recall time).
pub struct SynthEmbedder {
    corpus: Arc<Corpus>,
    model: String,
}

impl SynthEmbedder {
    /// Over a corpus.
    pub fn new(corpus: Arc<Corpus>) -> Self {
        let model = format!("synth-bow-{}-seed{}", corpus.dims, corpus.seed);
        SynthEmbedder { corpus, model }
    }
}

#[async_trait]
impl Embedder for SynthEmbedder {
    fn model_id(&self) -> &str {
        &self.model
    }
    fn dims(&self) -> usize {
        self.corpus.dims
    }
    async fn embed(&self, texts: &[String]) -> mnemo_core::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.corpus.embed(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_unit_length() {
        let a = Corpus::new(7, 16, 500, 20, 30);
        let b = Corpus::new(7, 16, 500, 20, 30);
        assert_eq!(a.memory_text(3), b.memory_text(3));
        assert_ne!(a.memory_text(3), a.memory_text(4));
        let v = a.embed(&a.memory_text(3));
        assert_eq!(v, b.embed(&b.memory_text(3)));
        let n: f32 = v.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-4);
        assert_eq!(a.embed("").len(), 16);
    }
}
