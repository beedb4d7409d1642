//! Where escalations are sent: `[[escalation.sinks]]` in config.
//!
//! - `kind = "webhook"`: an HTTP POST of the escalation's JSON (as a tenant reads it: short
//!   ids), `Content-Type: application/json`, signed: `X-Mnemo-Signature: sha256=<hex>`, the
//!   HMAC-SHA256 of the exact body bytes under the secret read from the environment variable
//!   `secret_env` (a receiver recomputes it and compares; [`verify`] does it). Failures
//!   (network, timeout, HTTP 408/429/5xx) are retried `retries` times with exponential backoff
//!   from `backoff_ms`, all of it within `timeout_ms`; another 4xx is a refusal, not retried.
//! - `kind = "jsonl"`: one line of the same JSON appended to `path` (relative to the config
//!   file that names it), synced.
//!
//! A sink that fails never fails the turn: the escalation stays open and its delivery records
//! the failure; a later turn raising the same escalation sends it again to the sinks that do
//! not have it yet (delivery is at least once: a receiver deduplicates by namespace and id).
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use sha2::Sha256;

use super::record::{Delivery, Escalation};
use crate::error::AgentError;

/// The signature header.
pub const SIGNATURE_HEADER: &str = "X-Mnemo-Signature";
/// A header naming the escalation (`namespace/e3`), for receivers that route before parsing.
pub const ESCALATION_HEADER: &str = "X-Mnemo-Escalation";

/// `[escalation]` settings.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EscalationSettings {
    /// Record an escalating turn's escalation in the ledger (default true).
    pub record: bool,
    /// Where escalations are sent.
    pub sinks: Vec<SinkSettings>,
}

impl Default for EscalationSettings {
    fn default() -> Self {
        EscalationSettings { record: true, sinks: Vec::new() }
    }
}

fn default_timeout_ms() -> u64 {
    5000
}
fn default_retries() -> u32 {
    3
}
fn default_backoff_ms() -> u64 {
    200
}

/// One `[[escalation.sinks]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum SinkSettings {
    /// An HTTP POST, signed.
    Webhook {
        /// `http://` or `https://` URL.
        url: String,
        /// The environment variable holding the signing secret.
        secret_env: String,
        /// The whole delivery (every attempt and wait) within this many milliseconds.
        #[serde(default = "default_timeout_ms")]
        timeout_ms: u64,
        /// Attempts after the first.
        #[serde(default = "default_retries")]
        retries: u32,
        /// The first wait before a retry (doubled each time).
        #[serde(default = "default_backoff_ms")]
        backoff_ms: u64,
        /// How deliveries name it (default `webhook` and the URL without its query).
        #[serde(default)]
        name: Option<String>,
    },
    /// A JSON-lines file.
    Jsonl {
        /// The file (relative to the config file naming it).
        path: PathBuf,
        /// How deliveries name it (default `jsonl` and the path).
        #[serde(default)]
        name: Option<String>,
    },
}

impl EscalationSettings {
    /// Read from the `[escalation]` table (`origin`: the file that set it, for messages).
    pub fn from_table(table: &toml::Table, origin: &str) -> Result<Self, AgentError> {
        let err = |message: String| AgentError::Config { file: origin.to_string(), message };
        let s: EscalationSettings = toml::Value::Table(table.clone()).try_into().map_err(|e: toml::de::Error| {
            err(format!("in [escalation]: {}", mnemo_contract::text::toml_error(&e, None)))
        })?;
        for (i, sink) in s.sinks.iter().enumerate() {
            match sink {
                SinkSettings::Webhook { url, secret_env, timeout_ms, retries, .. } => {
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        return Err(err(format!(
                            "escalation.sinks[{i}].url must be an http:// or https:// URL, got {url:?}"
                        )));
                    }
                    if secret_env.trim().is_empty() {
                        return Err(err(format!(
                            "escalation.sinks[{i}].secret_env must name the environment variable holding the signing secret"
                        )));
                    }
                    if *timeout_ms == 0 {
                        return Err(err(format!("escalation.sinks[{i}].timeout_ms must be at least 1")));
                    }
                    if *retries > 20 {
                        return Err(err(format!("escalation.sinks[{i}].retries must be at most 20, got {retries}")));
                    }
                }
                SinkSettings::Jsonl { path, .. } => {
                    if path.as_os_str().is_empty() {
                        return Err(err(format!("escalation.sinks[{i}].path must name a file")));
                    }
                }
            }
        }
        Ok(s)
    }
}

/// A sink ready to send.
#[derive(Clone, Debug)]
pub enum Sink {
    /// An HTTP POST.
    Webhook {
        /// How deliveries name it.
        label: String,
        /// The URL.
        url: String,
        /// The variable holding the secret (read at each delivery).
        secret_env: String,
        /// The bound of one delivery.
        timeout: Duration,
        /// Attempts after the first.
        retries: u32,
        /// The first backoff.
        backoff: Duration,
        /// The client (shared by the webhooks of a runtime).
        client: reqwest::Client,
    },
    /// A JSON-lines file.
    Jsonl {
        /// How deliveries name it.
        label: String,
        /// The file.
        path: PathBuf,
    },
}

impl Sink {
    /// Build the configured sinks (paths resolved against `config_dir`).
    pub fn build_all(settings: &EscalationSettings, config_dir: &Path) -> Result<Vec<Sink>, AgentError> {
        let mut client = None;
        let mut out = Vec::new();
        for s in &settings.sinks {
            out.push(match s {
                SinkSettings::Webhook { url, secret_env, timeout_ms, retries, backoff_ms, name } => {
                    let client = match &client {
                        Some(c) => Clone::clone(c),
                        None => {
                            // rustls with the ring provider; installing it twice is harmless.
                            let _ = rustls::crypto::ring::default_provider().install_default();
                            let c = reqwest::Client::builder().build().map_err(|e| AgentError::Config {
                                file: "[escalation]".into(),
                                message: format!("cannot build the HTTP client of the webhook sinks: {e}"),
                            })?;
                            client = Some(c.clone());
                            c
                        }
                    };
                    let shown = url.split(['?', '#']).next().unwrap_or(url);
                    Sink::Webhook {
                        label: name.clone().unwrap_or_else(|| format!("webhook {shown}")),
                        url: url.clone(),
                        secret_env: secret_env.trim().to_string(),
                        timeout: Duration::from_millis(*timeout_ms),
                        retries: *retries,
                        backoff: Duration::from_millis(*backoff_ms),
                        client,
                    }
                }
                SinkSettings::Jsonl { path, name } => {
                    let path = if path.is_absolute() { path.clone() } else { config_dir.join(path) };
                    Sink::Jsonl { label: name.clone().unwrap_or_else(|| format!("jsonl {}", path.display())), path }
                }
            });
        }
        Ok(out)
    }

    /// How deliveries name it.
    pub fn label(&self) -> &str {
        match self {
            Sink::Webhook { label, .. } | Sink::Jsonl { label, .. } => label,
        }
    }

    /// Send `body` (the escalation's JSON), returning the delivery (stamped `at`).
    pub async fn send(&self, e: &Escalation, body: &[u8], at: mnemo_contract::Timestamp) -> Delivery {
        let (delivered, attempts, status, error) = match self {
            Sink::Webhook { url, secret_env, timeout, retries, backoff, client, .. } => {
                let route = format!("{}/{}", e.namespace, e.id);
                let w = Webhook { url, secret_env, timeout: *timeout, retries: *retries, backoff: *backoff, client };
                w.post(body, &route).await
            }
            Sink::Jsonl { path, .. } => {
                let path = path.clone();
                match crate::blocking::blocking(|| append_line(&path, body)) {
                    Ok(()) => (true, 1, None, None),
                    Err(e) => (false, 1, None, Some(format!("cannot append to {}: {e}", path.display()))),
                }
            }
        };
        Delivery { sink: self.label().to_string(), delivered, attempts, at, status, error }
    }
}

fn append_line(path: &Path, body: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut line = Vec::with_capacity(body.len() + 1);
    // One line: the JSON is compact, with no raw line break in it.
    line.extend_from_slice(body);
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    f.write_all(&line)?;
    f.sync_data()
}

struct Webhook<'a> {
    url: &'a str,
    secret_env: &'a str,
    timeout: Duration,
    retries: u32,
    backoff: Duration,
    client: &'a reqwest::Client,
}

impl Webhook<'_> {
    /// (delivered, attempts, last status, last error).
    async fn post(&self, body: &[u8], route: &str) -> (bool, u32, Option<u16>, Option<String>) {
        let secret = match std::env::var(self.secret_env) {
            Ok(s) if !s.is_empty() => s,
            _ => {
                let why = format!(
                    "not sent: the signing secret variable {} is not set (an unsigned escalation could not be verified)",
                    self.secret_env
                );
                return (false, 0, None, Some(why));
            }
        };
        let signature = format!("sha256={}", sign(secret.as_bytes(), body));
        // Real elapsed time: this bounds real I/O, whatever the engine's clock says.
        let deadline = Instant::now() + self.timeout;
        let mut wait = self.backoff;
        let mut attempts = 0u32;
        let mut status = None;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                let why = format!("timed out: no success within timeout_ms ({} ms)", self.timeout.as_millis());
                return (false, attempts, status, Some(why));
            }
            attempts += 1;
            let sent = self
                .client
                .post(self.url)
                .timeout(remaining)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(SIGNATURE_HEADER, &signature)
                .header(ESCALATION_HEADER, route)
                .body(body.to_vec())
                .send()
                .await;
            let failure = match sent {
                Ok(resp) => {
                    let code = resp.status().as_u16();
                    status = Some(code);
                    if resp.status().is_success() {
                        return (true, attempts, status, None);
                    }
                    if !(code == 408 || code == 429 || code >= 500) {
                        let why = format!("refused: HTTP {code} (not retried: the receiver will not take it)");
                        return (false, attempts, status, Some(why));
                    }
                    format!("HTTP {code}")
                }
                Err(e) => chain(&e),
            };
            tracing::warn!(url = self.url, attempt = attempts, %failure, "escalation webhook delivery failed");
            if attempts > self.retries {
                let why = format!("{failure} (gave up after {attempts} attempt(s))");
                return (false, attempts, status, Some(why));
            }
            if Instant::now() + wait >= deadline {
                let why = format!(
                    "{failure} (gave up after {attempts} attempt(s): the next retry would pass timeout_ms, {} ms)",
                    self.timeout.as_millis()
                );
                return (false, attempts, status, Some(why));
            }
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
    }
}

/// An error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !line.contains(&t) {
            line.push_str(": ");
            line.push_str(&t);
        }
        cause = c.source();
    }
    line
}

/// The hex HMAC-SHA256 of `body` under `secret` (what `X-Mnemo-Signature` carries after
/// `sha256=`).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else { return String::new() };
    mac.update(body);
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `header` (`sha256=<hex>`, as `X-Mnemo-Signature` carries it) is the signature of
/// `body` under `secret` (compared in constant time).
pub fn verify(secret: &[u8], body: &[u8], header: &str) -> bool {
    let Some(hex) = header.trim().strip_prefix("sha256=") else { return false };
    let Some(bytes) = unhex(hex) else { return false };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else { return false };
    mac.update(body);
    mac.verify_slice(&bytes).is_ok()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn signatures_verify_with_their_secret_only() {
        // RFC 4231 test case 2.
        let mac = sign(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        let header = format!("sha256={mac}");
        assert!(verify(b"Jefe", b"what do ya want for nothing?", &header));
        assert!(!verify(b"jefe", b"what do ya want for nothing?", &header));
        assert!(!verify(b"Jefe", b"what do ya want for nothing!", &header));
        assert!(!verify(b"Jefe", b"what do ya want for nothing?", &mac), "the sha256= prefix is part of it");
        assert!(!verify(b"Jefe", b"x", "sha256=zz"));
    }

    #[test]
    fn settings_are_checked_naming_the_sink() {
        let t: toml::Table =
            toml::from_str("[[sinks]]\nkind = \"webhook\"\nurl = \"ftp://x\"\nsecret_env = \"S\"\n").unwrap();
        let e = EscalationSettings::from_table(&t, "f.toml").unwrap_err().to_string();
        assert!(e.contains("f.toml") && e.contains("sinks[0].url"), "{e}");
        let t: toml::Table = toml::from_str("[[sinks]]\nkind = \"pager\"\n").unwrap();
        let e = EscalationSettings::from_table(&t, "f.toml").unwrap_err().to_string();
        assert!(e.contains("pager"), "{e}");
        let t: toml::Table =
            toml::from_str("[[sinks]]\nkind = \"jsonl\"\npath = \"e.jsonl\"\nurl = \"http://x\"\n").unwrap();
        let e = EscalationSettings::from_table(&t, "f.toml").unwrap_err().to_string();
        assert!(e.contains("url"), "unknown keys are refused: {e}");
        let t: toml::Table = toml::from_str("[[sinks]]\nkind = \"webhook\"\nurl = \"http://x\"\n").unwrap();
        let e = EscalationSettings::from_table(&t, "f.toml").unwrap_err().to_string();
        assert!(e.contains("secret_env"), "{e}");
        let t: toml::Table = toml::from_str(
            "record = false\n[[sinks]]\nkind = \"webhook\"\nurl = \"https://h/x?token=1\"\nsecret_env = \"S\"\n\
             [[sinks]]\nkind = \"jsonl\"\npath = \"e.jsonl\"\n",
        )
        .unwrap();
        let s = EscalationSettings::from_table(&t, "f.toml").unwrap();
        assert!(!s.record);
        let sinks = Sink::build_all(&s, Path::new("/conf")).unwrap();
        assert_eq!(sinks[0].label(), "webhook https://h/x", "a query (a token) is not shown");
        assert_eq!(sinks[1].label(), "jsonl /conf/e.jsonl");
    }
}
