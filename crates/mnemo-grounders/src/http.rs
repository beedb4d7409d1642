//! A read-only grounder over an HTTP JSON API (`[[grounders]] kind = "http"`): GET only.
//!
//! ```toml
//! [[grounders]]
//! kind = "http"
//! source = "erp-api"
//! url = "https://erp.example.com/api/items/{entity}/{attribute}"  # values are percent-encoded
//! value = "/data/value"     # JSON pointer to the value (a string or a number)
//! as_of = "/data/updated"   # optional JSON pointer to an RFC 3339 / YYYY-MM-DD time
//! timeout_ms = 2000         # optional; default 2000
//! headers = { Authorization = "ERP_TOKEN" }   # header name = the environment variable holding it
//! ```
//!
//! 404 means the source does not hold the claim; `null` at the value pointer too. Any other
//! failure (connection refused, another status, a body that is not JSON, a missing pointer, an
//! object or array where a value should be) is an error: the claim stays unverified.
use async_trait::async_trait;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mnemo_contract::registry::GrounderContext;
use mnemo_contract::text::norm_value;
use mnemo_contract::{CoreError, GroundedValue, Grounder, GrounderErrorKind, Result};

use crate::common::parse_as_of;

/// Largest body read (a system-of-record answer is small; more is garbage).
const MAX_BODY: usize = 1 << 20;

/// A GET-only grounder over a JSON API.
pub struct HttpGrounder {
    source: String,
    url: String,
    value: String,
    as_of: Option<String>,
    headers: Vec<(String, String)>,
    timeout: Duration,
    client: reqwest::Client,
}

/// Percent-encode everything but RFC 3986 unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl HttpGrounder {
    /// A grounder named `source` GETting `url` (with `{entity}` / `{attribute}` placeholders)
    /// and reading the value at the JSON pointer `value`.
    pub fn new(source: &str, url: &str, value: &str, timeout: Duration) -> Result<Self> {
        let err = |m: String| CoreError::Config(format!("{source}: {m}"));
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(err(format!("url {url:?} must start with http:// or https://")));
        }
        for p in [value] {
            if !p.is_empty() && !p.starts_with('/') {
                return Err(err(format!("JSON pointer {p:?} must start with '/'")));
            }
        }
        // rustls with the ring provider (as the live model client); installing it twice is
        // harmless (the first one stays).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| err(format!("cannot build the HTTP client: {e}")))?;
        Ok(HttpGrounder {
            source: source.to_string(),
            url: url.to_string(),
            value: value.to_string(),
            as_of: None,
            headers: Vec::new(),
            timeout,
            client,
        })
    }
    /// Also read the time the source says the value changed, at this JSON pointer.
    pub fn with_as_of(mut self, pointer: &str) -> Self {
        self.as_of = Some(pointer.to_string());
        self
    }
    /// Send this header on every request.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    fn url_for(&self, entity: &str, attribute: &str) -> String {
        self.url.replace("{entity}", &encode(entity.trim())).replace("{attribute}", &encode(attribute.trim()))
    }
}

#[async_trait]
impl Grounder for HttpGrounder {
    fn source(&self) -> &str {
        &self.source
    }
    async fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<GroundedValue>> {
        let err_of = |kind, m: String| {
            CoreError::grounder_message(kind, format!("{}: {entity} | {attribute}: {m}", self.source))
        };
        // No answer (retrying later may work) vs an answer that holds no usable value.
        let unavailable = |m: String| err_of(GrounderErrorKind::Unavailable, m);
        let err = |m: String| err_of(GrounderErrorKind::BadAnswer, m);
        let mut req = self.client.get(self.url_for(entity, attribute));
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let resp = req.send().await.map_err(|e| unavailable(format!("request failed: {e}")))?;
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            let kind = if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                GrounderErrorKind::Unavailable
            } else {
                // The source refused the request (a key, a URL template): no retry fixes it.
                GrounderErrorKind::Other
            };
            return Err(err_of(kind, format!("HTTP status {status}")));
        }
        let body = resp.bytes().await.map_err(|e| unavailable(format!("reading the body: {e}")))?;
        if body.len() > MAX_BODY {
            return Err(err(format!("body of {} bytes is too large", body.len())));
        }
        let json: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| err(format!("the body is not JSON: {e}")))?;
        let value = match json.pointer(&self.value) {
            None => return Err(err(format!("no {:?} in the answer", self.value))),
            Some(serde_json::Value::Null) => return Ok(None),
            Some(serde_json::Value::String(s)) => norm_value(s),
            Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => v.to_string(),
            Some(other) => return Err(err(format!("{:?} holds {other}, not a value", self.value))),
        };
        let as_of = match self.as_of.as_deref().and_then(|p| json.pointer(p)) {
            Some(serde_json::Value::String(t)) => Some(parse_as_of(t).map_err(err)?),
            _ => None,
        };
        Ok(Some(GroundedValue { value, source: self.source.clone(), as_of }))
    }
    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    source: String,
    url: String,
    value: String,
    #[serde(default)]
    as_of: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

fn build(ctx: &GrounderContext<'_>) -> Result<Arc<dyn Grounder>> {
    let s: Settings = ctx.settings()?;
    let origin = ctx.origin;
    if s.source.trim().is_empty() {
        return Err(CoreError::Config(format!("{origin}: source must not be empty")));
    }
    let timeout = crate::common::timeout(s.timeout_ms, origin)?.unwrap_or(Duration::from_millis(2000));
    let mut g = HttpGrounder::new(s.source.trim(), &s.url, &s.value, timeout)
        .map_err(|e| CoreError::Config(format!("{origin}: {e}")))?;
    if let Some(p) = &s.as_of {
        if !p.starts_with('/') {
            return Err(CoreError::Config(format!("{origin}: as_of pointer {p:?} must start with '/'")));
        }
        g = g.with_as_of(p);
    }
    for (name, var) in &s.headers {
        // secrets stay in the environment; config names the variable
        let v = std::env::var(var).map_err(|_| {
            CoreError::Config(format!(
                "{origin}: header {name:?} needs the environment variable {var}, which is not set"
            ))
        })?;
        g = g.with_header(name, &v);
    }
    Ok(Arc::new(g))
}

mnemo_contract::register_grounder!(
    "http",
    "read-only HTTP JSON API: GET a URL template, JSON pointers for value and as_of",
    build
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_percent_encoded() {
        let g = HttpGrounder::new("x", "http://h/i/{entity}/{attribute}", "/v", Duration::from_secs(1));
        let url = g.map(|g| g.url_for("IC-MC-44 from S-208", "lead time/?")).unwrap_or_default();
        assert_eq!(url, "http://h/i/IC-MC-44%20from%20S-208/lead%20time%2F%3F");
    }
}
