//! An on-disk cache of embeddings by (model id, text), for repeated benchmark runs while tuning
//! fusion: a real model embeds LoCoMo's turns in minutes on two cores; a cached rerun in
//! seconds. Timing figures of a cached run measure the cache, not the model: the report says so.
//!
//! File format (little-endian): per entry, the 64-bit FNV-1a hash of `model_id \0 text`, the
//! dimension count as u32, then that many f32. Appended as new texts are embedded; a truncated
//! tail (an interrupted run) is ignored on load.
use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mnemo_contract::{CoreError, Embedder};

use crate::error::{BenchError, Result};

/// An embedder that answers from (and adds to) a cache file.
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    path: PathBuf,
    map: Mutex<HashMap<u64, Vec<f32>>>,
    hits: std::sync::atomic::AtomicUsize,
}

fn key(model: &str, text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in model.bytes().chain([0u8]).chain(text.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl CachedEmbedder {
    /// Wrap `inner`, loading `path` if it exists.
    pub fn open(inner: Arc<dyn Embedder>, path: &Path) -> Result<Self> {
        let mut map = HashMap::new();
        if path.exists() {
            let bytes = std::fs::read(path).map_err(|e| BenchError::Io { path: path.to_path_buf(), source: e })?;
            let mut at = 0usize;
            while at + 12 <= bytes.len() {
                let mut k = [0u8; 8];
                k.copy_from_slice(&bytes[at..at + 8]);
                let mut d = [0u8; 4];
                d.copy_from_slice(&bytes[at + 8..at + 12]);
                let dims = u32::from_le_bytes(d) as usize;
                let end = at + 12 + dims * 4;
                if end > bytes.len() {
                    break;
                }
                let v: Vec<f32> =
                    bytes[at + 12..end].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                map.insert(u64::from_le_bytes(k), v);
                at = end;
            }
        }
        Ok(CachedEmbedder { inner, path: path.to_path_buf(), map: Mutex::new(map), hits: Default::default() })
    }

    /// How many texts were answered from the cache.
    pub fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn append(&self, new: &[(u64, Vec<f32>)]) -> mnemo_contract::Result<()> {
        let io = |e: std::io::Error| {
            CoreError::model_message(
                mnemo_contract::ModelRole::Embedder,
                mnemo_contract::ModelErrorKind::Other,
                format!("embedding cache {}: {e}", self.path.display()),
            )
        };
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path).map_err(io)?;
        let mut buf = Vec::new();
        for (k, v) in new {
            buf.extend_from_slice(&k.to_le_bytes());
            buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
            for x in v {
                buf.extend_from_slice(&x.to_le_bytes());
            }
        }
        f.write_all(&buf).map_err(io)
    }
}

#[async_trait]
impl Embedder for CachedEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    async fn embed(&self, texts: &[String]) -> mnemo_contract::Result<Vec<Vec<f32>>> {
        let model = self.inner.model_id().to_string();
        let keys: Vec<u64> = texts.iter().map(|t| key(&model, t)).collect();
        let missing: Vec<usize> = {
            let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            (0..texts.len()).filter(|i| !map.contains_key(&keys[*i])).collect()
        };
        self.hits.fetch_add(texts.len() - missing.len(), std::sync::atomic::Ordering::Relaxed);
        if !missing.is_empty() {
            let todo: Vec<String> = missing.iter().map(|i| texts[*i].clone()).collect();
            let vs = self.inner.embed(&todo).await?;
            let new: Vec<(u64, Vec<f32>)> = missing.iter().map(|i| keys[*i]).zip(vs).collect();
            self.append(&new)?;
            let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            map.extend(new);
        }
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        keys.iter()
            .map(|k| {
                map.get(k).cloned().ok_or_else(|| {
                    CoreError::model_message(
                        mnemo_contract::ModelRole::Embedder,
                        mnemo_contract::ModelErrorKind::Other,
                        "embedding cache lost a vector",
                    )
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn a_reopened_cache_answers_without_the_model() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.bin");
        let fake: Arc<dyn Embedder> = Arc::new(mnemo_llm::FakeQwen::new(16).unwrap());
        let texts = vec!["alpha beta".to_string(), "gamma".to_string()];
        let a = CachedEmbedder::open(fake.clone(), &p).unwrap();
        let first = a.embed(&texts).await.unwrap();
        assert_eq!(a.hits(), 0);
        let b = CachedEmbedder::open(fake, &p).unwrap();
        assert_eq!(b.embed(&texts).await.unwrap(), first);
        assert_eq!(b.hits(), 2);
    }
}
