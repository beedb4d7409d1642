//! The resilient transport of the live client: one JSON POST to an OpenAI-compatible
//! endpoint with connect and request timeouts, bounded retries with exponential backoff and
//! jitter on 429, 5xx and timeouts (honouring `Retry-After`), and a bound on concurrent calls.
//!
//! Errors name the endpoint, the status and the model; the API key is only ever placed in the
//! `Authorization` header and never in any message, log line or file.
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;
use tracing::Instrument as _;

use crate::error::LlmError;

/// Retry and timeout settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Resilience {
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Whole-request timeout (per attempt).
    pub request_timeout: Duration,
    /// Retries after the first attempt (0: no retry).
    pub max_retries: u32,
    /// Base of the exponential backoff: attempt n waits base·2ⁿ⁻¹ plus jitter (tests use a few ms).
    pub backoff_base: Duration,
    /// Cap on one wait (also caps a server's `Retry-After`).
    pub backoff_max: Duration,
    /// Calls in flight at once.
    pub max_concurrency: usize,
}

impl Default for Resilience {
    fn default() -> Self {
        Resilience {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            max_retries: 4,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            max_concurrency: 4,
        }
    }
}

/// An answer and how many attempts it took.
#[derive(Debug)]
pub struct Answer {
    /// The response body.
    pub body: Value,
    /// Attempts made (1 = no retry).
    pub attempts: u32,
}

/// The HTTP side of the live client, shared by chat and embeddings.
pub struct Transport {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    resilience: Resilience,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for Transport {
    // Never print the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport").field("base_url", &self.base_url).field("api_key", &"<redacted>").finish()
    }
}

/// Whether a status is worth another attempt.
fn retryable(status: u16) -> bool {
    status == 429 || status == 408 || (500..=599).contains(&status)
}

/// A small jitter in 0..=max from the process's random hasher state (no RNG dependency; the
/// point is only that concurrent clients do not retry in lock-step).
fn jitter(max: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(max.as_nanos() as u64);
    let nanos = max.as_nanos() as u64;
    if nanos == 0 {
        return Duration::ZERO;
    }
    Duration::from_nanos(h.finish() % (nanos + 1))
}

/// `Retry-After` in seconds (the HTTP-date form is not honoured: it needs the wall clock).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    v.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).map(Duration::from_secs_f64)
}

impl Transport {
    /// A transport to `base_url` (e.g. `https://dashscope-intl.aliyuncs.com/compatible-mode/v1`).
    pub fn new(base_url: &str, api_key: String, resilience: Resilience) -> Result<Self, LlmError> {
        // rustls with the ring provider; installing it twice is harmless (the first one stays).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(resilience.connect_timeout)
            .timeout(resilience.request_timeout)
            .build()
            .map_err(|e| LlmError::InvalidSetting(format!("cannot build the HTTP client: {e}")))?;
        let permits = Arc::new(Semaphore::new(resilience.max_concurrency.max(1)));
        Ok(Transport { http, base_url: base_url.trim_end_matches('/').to_string(), api_key, resilience, permits })
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// POST `body` to `{base_url}{path}` for `model`, retrying as configured.
    pub async fn post(&self, path: &str, model: &str, body: &Value) -> Result<Answer, LlmError> {
        let endpoint = format!("{}{}", self.base_url, path);
        let _permit = self.permits.acquire().await.map_err(|_| LlmError::Api {
            endpoint: endpoint.clone(),
            model: model.to_string(),
            status: None,
            attempts: 0,
            detail: "the client is shutting down".into(),
        })?;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let span = tracing::debug_span!("http", endpoint = %endpoint, model, attempt);
            let sent = self.http.post(&endpoint).bearer_auth(&self.api_key).json(body).send().instrument(span).await;
            let (status, wait, detail) = match sent {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let after = retry_after(resp.headers());
                    let text = resp.text().await.unwrap_or_default();
                    if (200..300).contains(&status) {
                        return serde_json::from_str(&text).map(|body| Answer { body, attempts: attempt }).map_err(
                            |e| LlmError::Api {
                                endpoint: endpoint.clone(),
                                model: model.to_string(),
                                status: Some(status),
                                attempts: attempt,
                                detail: format!("the response body is not JSON ({e})"),
                            },
                        );
                    }
                    if !retryable(status) {
                        return Err(LlmError::Api {
                            endpoint,
                            model: model.to_string(),
                            status: Some(status),
                            attempts: attempt,
                            detail: snippet(&text),
                        });
                    }
                    (Some(status), after, snippet(&text))
                }
                Err(e) if e.is_timeout() || e.is_connect() || e.is_request() => {
                    let what = if e.is_timeout() { "timed out" } else { "could not connect" };
                    (None, None, format!("{what}: {}", error_chain(&e)))
                }
                Err(e) => {
                    return Err(LlmError::Api {
                        endpoint,
                        model: model.to_string(),
                        status: None,
                        attempts: attempt,
                        detail: error_chain(&e),
                    })
                }
            };
            if attempt > self.resilience.max_retries {
                return Err(LlmError::Api {
                    endpoint,
                    model: model.to_string(),
                    status,
                    attempts: attempt,
                    detail: format!("giving up; last answer: {detail}"),
                });
            }
            let exp = self.resilience.backoff_base.saturating_mul(1u32 << (attempt - 1).min(16));
            let delay = match wait {
                Some(server) => server,
                None => exp + jitter(exp / 2),
            }
            .min(self.resilience.backoff_max);
            tracing::warn!(
                endpoint = %endpoint, model, attempt, status = status.map(|s| s as i64).unwrap_or(-1),
                delay_ms = delay.as_millis() as u64, "retrying model call: {detail}"
            );
            tokio::time::sleep(delay).await;
        }
    }
}

/// An error with its sources, one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// The start of an error body, one line.
fn snippet(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut head: String = one.chars().take(300).collect();
    if head.len() < one.len() {
        head.push('…');
    }
    if head.is_empty() {
        "(empty body)".into()
    } else {
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_statuses() {
        assert!(retryable(429) && retryable(500) && retryable(503) && !retryable(400) && !retryable(401));
    }

    #[test]
    fn jitter_is_bounded() {
        for _ in 0..100 {
            assert!(jitter(Duration::from_millis(10)) <= Duration::from_millis(10));
        }
        assert_eq!(jitter(Duration::ZERO), Duration::ZERO);
    }
}
