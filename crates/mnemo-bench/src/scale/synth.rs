//! A deterministic synthetic corpus: pseudo-words grouped into topics, memories drawn from a
//! topic (with some background words), and embeddings = the normalised sum of fixed word
//! vectors. The same function embeds queries ([`SynthEmbedder`]), so recall exercises the real
//! dense path. No model is called.
//!
//! Topic weight. With weight 0 an embedding is only the bag of words (`bow`), and the vectors
//! are nearly structureless: each word is used by ~6 of the 2,000 topics, two memories of one
//! topic share few words (cosine ≈ 0.1), and a query's exact top 10 are near-ties spread over
//! many topics (at 100k: 1st ≈ 0.45, 10th ≈ 0.29, 100th ≈ 0.20, 1000th ≈ 0.15) — unlike real
//! embeddings, where texts on one subject sit close together. With weight β (default 0.6) an
//! embedding is β·the direction of the text's dominant topic (the topic using most of its
//! words; ties to the lower topic) + √(1−β²)·its normalised bag of words: what a text is
//! about, plus its wording, as a real embedder gives. Memories of one topic then have cosine
//! ≈ β² + (1−β²)·0.1 to each other and ≈ 0 across topics. Texts, and so the lexical side, do
//! not depend on β.
use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_contract::Embedder;

pub use crate::rng::Rng;

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
    topic_weight: f32,
    /// Each topic's direction, `topics × dims` (empty at weight 0).
    topic_dirs: Vec<f32>,
    /// Each word's topics (empty at weight 0).
    topics_of: Vec<Vec<u32>>,
}

impl Corpus {
    /// A corpus of `words` words, `topics` topics of `per_topic` words, `dims`-dimensional,
    /// with independent random word vectors (topic weight 0).
    pub fn new(seed: u64, dims: usize, words: usize, topics: usize, per_topic: usize) -> Self {
        Self::with_topic_weight(seed, dims, words, topics, per_topic, 0.0)
    }

    /// As [`Corpus::new`], with embeddings carrying their dominant topic's direction by
    /// `topic_weight` in 0..=1 (see the module docs); the texts are the same for any weight.
    pub fn with_topic_weight(
        seed: u64,
        dims: usize,
        words: usize,
        topics: usize,
        per_topic: usize,
        topic_weight: f32,
    ) -> Self {
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
        let topics: Vec<Vec<usize>> = (0..topics).map(|_| (0..per_topic).map(|_| rng.below(words)).collect()).collect();
        let beta = topic_weight.clamp(0.0, 1.0);
        // A separate stream, so the texts above stay those of weight 0.
        let mut trng = Rng::new(seed ^ 0x7091_C5EE_D000_0001);
        let mut topic_dirs = Vec::new();
        let mut topics_of = vec![Vec::new(); words];
        if beta > 0.0 {
            for (t, ws) in topics.iter().enumerate() {
                let v: Vec<f32> = (0..dims).map(|_| trng.normalish()).collect();
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                topic_dirs.extend(v.iter().map(|x| x / n));
                for &w in ws {
                    if topics_of[w].last() != Some(&(t as u32)) {
                        topics_of[w].push(t as u32);
                    }
                }
            }
        }
        Corpus { vocab, word_ix, vectors, topics, dims, seed, topic_weight: beta, topic_dirs, topics_of }
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

    /// The embedding of a text: its normalised bag of words (the sum of its known words'
    /// vectors), mixed with its dominant topic's direction by the topic weight.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dims];
        let mut votes: HashMap<u32, u32> = HashMap::new();
        for w in text.split_whitespace() {
            if let Some(&ix) = self.word_ix.get(w) {
                let row = &self.vectors[ix * self.dims..(ix + 1) * self.dims];
                for (a, b) in v.iter_mut().zip(row) {
                    *a += b;
                }
                for &t in self.topics_of.get(ix).map_or(&[][..], |t| &t[..]) {
                    *votes.entry(t).or_insert(0) += 1;
                }
            }
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n == 0.0 {
            v[0] = 1.0;
            return v;
        }
        v.iter_mut().for_each(|x| *x /= n);
        let top = votes.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
        if let Some((t, _)) = top {
            let beta = self.topic_weight;
            let keep = (1.0 - beta * beta).sqrt();
            let dir = &self.topic_dirs[t as usize * self.dims..(t as usize + 1) * self.dims];
            for (a, d) in v.iter_mut().zip(dir) {
                *a = keep * *a + beta * d;
            }
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            v.iter_mut().for_each(|x| *x /= n);
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
        let model = format!("synth-bow-{}-seed{}-topic{}", corpus.dims, corpus.seed, corpus.topic_weight);
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
    async fn embed(&self, texts: &[String]) -> mnemo_contract::Result<Vec<Vec<f32>>> {
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

    #[test]
    fn topic_weight_clusters_vectors_and_keeps_texts() {
        let flat = Corpus::new(7, 64, 2000, 50, 30);
        let topical = Corpus::with_topic_weight(7, 64, 2000, 50, 30, 0.6);
        assert_eq!(flat.memory_text(5), topical.memory_text(5), "texts do not depend on the weight");
        // Same-topic memories are much closer with the weight than without.
        let cos = |c: &Corpus, a: u64, b: u64| {
            let (x, y) = (c.embed(&c.memory_text(a)), c.embed(&c.memory_text(b)));
            x.iter().zip(&y).map(|(p, q)| p * q).sum::<f32>()
        };
        let topic_of = |i: u64| Rng::new(7u64.wrapping_mul(31).wrapping_add(i)).below(50);
        let pairs: Vec<(u64, u64)> = (0..400u64)
            .flat_map(|a| (a + 1..400).map(move |b| (a, b)))
            .filter(|(a, b)| topic_of(*a) == topic_of(*b))
            .take(200)
            .collect();
        assert!(pairs.len() >= 100);
        let mean = |c: &Corpus| pairs.iter().map(|(a, b)| cos(c, *a, *b)).sum::<f32>() / pairs.len() as f32;
        assert!(mean(&topical) > mean(&flat) + 0.2, "{} vs {}", mean(&topical), mean(&flat));
    }
}
