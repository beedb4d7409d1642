//! An embedder wrapper that logs how long each call took, for the speed figures of
//! `bench locomo` (embedding throughput at ingest, query-embedding latency, recall latency
//! with and without the query embedding). Durations are measured with `Instant`: a benchmark
//! measures, it does not decide anything by the clock.
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mnemo_contract::Embedder;

/// Logs (texts, duration) per `embed` call.
pub struct TimingEmbedder {
    inner: Arc<dyn Embedder>,
    log: Mutex<Vec<(usize, Duration)>>,
}

impl TimingEmbedder {
    /// Wrap `inner`.
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        TimingEmbedder { inner, log: Mutex::new(Vec::new()) }
    }
    /// The calls logged since the last `take`.
    pub fn take(&self) -> Vec<(usize, Duration)> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[async_trait]
impl Embedder for TimingEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    async fn embed(&self, texts: &[String]) -> mnemo_contract::Result<Vec<Vec<f32>>> {
        let t0 = Instant::now();
        let v = self.inner.embed(texts).await;
        self.log.lock().unwrap_or_else(|p| p.into_inner()).push((texts.len(), t0.elapsed()));
        v
    }
}
