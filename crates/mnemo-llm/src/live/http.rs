//! The resilient transport of the live client: one JSON POST to an OpenAI-compatible
//! endpoint with connect and per-request timeouts, bounded retries with exponential backoff and
//! jitter on 429, 408, 5xx and failed connections (honouring `Retry-After`), and a bound on
//! concurrent calls.
//!
//! A timed-out call is not retried unless [`Resilience::retry_timeouts`] says so: a slow model
//! (a CPU model behind llama.cpp) may still be computing the first answer, and a second request
//! would only queue behind it and time out in turn.
//!
//! Errors name the endpoint, the status and the model; the API key is only ever placed in the
//! `Authorization` header and never in any message, log line or file. With no key (a local
//! server that needs none) no `Authorization` header is sent at all.
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
    /// Whole-request timeout (per attempt) of a call that names none ([`Transport::post`]).
    pub request_timeout: Duration,
    /// Retry a timed-out call (off by default: the server may still be computing it).
    pub retry_timeouts: bool,
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
            retry_timeouts: false,
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
    /// None: send no `Authorization` header (a local server that needs no key).
    api_key: Option<String>,
    resilience: Resilience,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for Transport {
    // Never print the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = if self.api_key.is_some() { "<redacted>" } else { "<none>" };
        f.debug_struct("Transport").field("base_url", &self.base_url).field("api_key", &key).finish()
    }
}

/// Whether a status is worth another attempt.
fn retryable(status: u16) -> bool {
    status == 429 || status == 408 || (500..=599).contains(&status)
}

/// Why an attempt failed in a way worth retrying; its label is the `status` field of the retry
/// log line (a string, so a timeout reads `timeout` rather than a made-up number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// The server answered with this retryable HTTP status.
    Status(u16),
    /// No answer within the request timeout.
    Timeout,
    /// The connection could not be made (refused, reset, connect timeout).
    Connect,
    /// The request could not be sent for another reason.
    Request,
}

impl Failure {
    fn label(self) -> String {
        match self {
            Failure::Status(s) => s.to_string(),
            Failure::Timeout => "timeout".into(),
            Failure::Connect => "connect".into(),
            Failure::Request => "request".into(),
        }
    }
    fn status(self) -> Option<u16> {
        match self {
            Failure::Status(s) => Some(s),
            _ => None,
        }
    }
}

/// Classify a reqwest error worth retrying, or None. A connect timeout counts as a failed
/// connection (the server never took the request, so retrying it duplicates no work).
fn failure_of(e: &reqwest::Error) -> Option<Failure> {
    if e.is_connect() {
        Some(Failure::Connect)
    } else if e.is_timeout() {
        Some(Failure::Timeout)
    } else if e.is_request() || e.is_body() {
        Some(Failure::Request)
    } else {
        None
    }
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
    /// A transport to `base_url` (e.g. `https://dashscope-intl.aliyuncs.com/compatible-mode/v1`),
    /// sending `api_key` as a bearer token (None: no `Authorization` header).
    pub fn new(base_url: &str, api_key: Option<String>, resilience: Resilience) -> Result<Self, LlmError> {
        // rustls with the ring provider; installing it twice is harmless (the first one stays).
        let _ = rustls::crypto::ring::default_provider().install_default();
        // No client-wide timeout: every request sets its own (the tiers of a chat differ).
        let http = reqwest::Client::builder()
            .connect_timeout(resilience.connect_timeout)
            .build()
            .map_err(|e| LlmError::InvalidSetting(format!("cannot build the HTTP client: {e}")))?;
        let permits = Arc::new(Semaphore::new(resilience.max_concurrency.max(1)));
        Ok(Transport { http, base_url: base_url.trim_end_matches('/').to_string(), api_key, resilience, permits })
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The request timeout of a call that names none.
    pub fn request_timeout(&self) -> Duration {
        self.resilience.request_timeout
    }

    /// POST `body` to `{base_url}{path}` for `model` within the configured request timeout,
    /// retrying as configured.
    pub async fn post(&self, path: &str, model: &str, body: &Value) -> Result<Answer, LlmError> {
        self.post_within(path, model, body, self.resilience.request_timeout).await
    }

    /// POST `body` to `{base_url}{path}` for `model`, each attempt given `timeout` (a chat
    /// call's tier decides it), retrying as configured.
    pub async fn post_within(
        &self,
        path: &str,
        model: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Answer, LlmError> {
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
            let mut request = self.http.post(&endpoint).timeout(timeout).json(body);
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let sent = async {
                let resp = request.send().await?;
                let status = resp.status().as_u16();
                let after = retry_after(resp.headers());
                // The body is read within the same timeout; a failure there is the call's.
                let text = resp.text().await?;
                Ok::<_, reqwest::Error>((status, after, text))
            }
            .instrument(span)
            .await;
            let (failure, wait, detail) = match sent {
                Ok((status, after, text)) => {
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
                    (Failure::Status(status), after, snippet(&text))
                }
                Err(e) => match failure_of(&e) {
                    Some(Failure::Timeout) if !self.resilience.retry_timeouts => {
                        return Err(LlmError::Api {
                            endpoint,
                            model: model.to_string(),
                            status: None,
                            attempts: attempt,
                            detail: format!(
                                "timed out after {} ms and not retried (the server may still be computing the answer; \
                                 raise the tier's timeout in [llm], or set retry_timeouts = true): {}",
                                timeout.as_millis(),
                                error_chain(&e)
                            ),
                        });
                    }
                    Some(f) => {
                        let what = match f {
                            Failure::Timeout => format!("timed out after {} ms", timeout.as_millis()),
                            Failure::Connect => "could not connect".to_string(),
                            _ => "could not send the request".to_string(),
                        };
                        (f, None, format!("{what}: {}", error_chain(&e)))
                    }
                    None => {
                        return Err(LlmError::Api {
                            endpoint,
                            model: model.to_string(),
                            status: None,
                            attempts: attempt,
                            detail: error_chain(&e),
                        })
                    }
                },
            };
            if attempt > self.resilience.max_retries {
                return Err(LlmError::Api {
                    endpoint,
                    model: model.to_string(),
                    status: failure.status(),
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
                endpoint = %endpoint, model, attempt, status = %failure.label(),
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
    fn the_retry_log_names_a_timeout_and_a_failed_connection_in_words() {
        assert_eq!(Failure::Timeout.label(), "timeout");
        assert_eq!(Failure::Connect.label(), "connect");
        assert_eq!(Failure::Status(503).label(), "503");
        assert_eq!(Failure::Timeout.status(), None);
        assert_eq!(Failure::Status(429).status(), Some(429));
    }

    #[test]
    fn jitter_is_bounded() {
        for _ in 0..100 {
            assert!(jitter(Duration::from_millis(10)) <= Duration::from_millis(10));
        }
        assert_eq!(jitter(Duration::ZERO), Duration::ZERO);
    }
}
