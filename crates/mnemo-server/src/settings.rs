//! `[serve]` settings: limits and the bearer tokens, each reaching a list of namespaces.
//!
//! ```toml
//! [serve]
//! max_body_bytes = 2097152     # larger request bodies get 413 payload_too_large
//! max_page = 1000              # most memories one list page returns
//! max_query_bytes = 4096       # longest recall query
//! header_read_timeout_secs = 10  # a request head must arrive whole within this (slowloris)
//! idle_timeout_secs = 75       # a kept-alive connection with no request is closed after this
//! request_body_timeout_secs = 30 # longest wait for the next piece of a request body (408)
//! max_connections = 1024       # connections held at once; more are closed at accept
//! max_in_flight = 64           # requests handled at once; more get 503 overloaded (Retry-After)
//! rate_limit_requests = 0      # per token, per window (429 + Retry-After); 0: no limit
//! rate_limit_window_secs = 60
//! cors_origins = []            # browser origins allowed to call (CORS); none by default
//! metrics_public = false       # GET /metrics without a token (else a token reaching "*")
//!
//! [[serve.tokens]]
//! principal = "ops-bot"        # the authenticated source its turns are recorded under
//! token_env = "MNEMO_TOKEN_OPS" # the NAME of the variable holding the token (or token = "…")
//! namespaces = ["ops", "shared"] # "*" reaches every namespace
//! answers = false              # may answer or dismiss escalations (a human's word: default false)
//! rate_limit_requests = 600    # this token's own limit per window (else serve.rate_limit_requests)
//! ```
//!
//! docs/serving.md explains each guard and the reverse-proxy (TLS) set-up.
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::ServerError;

/// Default largest request body: a turn of the engine's maximum (1 MiB) fits with room for JSON
/// escaping.
pub const DEFAULT_MAX_BODY_BYTES: usize = 2 << 20;
/// Default longest recall query.
pub const DEFAULT_MAX_QUERY_BYTES: usize = 4096;
/// Default time a client has to send a whole request head: long enough for any real client on
/// a slow link, short enough that a connection dribbling a header (slowloris) is let go soon.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 10;
/// Default idle time of a kept-alive connection: above the 60 s for which nginx keeps an idle
/// upstream connection, so the proxy, not Mnemo, closes first (no request sent on a connection
/// the server is closing).
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 75;
/// Default longest wait for the next piece of a request body.
pub const DEFAULT_REQUEST_BODY_TIMEOUT_SECS: u64 = 30;
/// Default most connections held at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default most requests handled at once: well above what two cores serve concurrently, so
/// only a pile-up is shed.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
/// Default rate-limit window.
pub const DEFAULT_RATE_LIMIT_WINDOW_SECS: u64 = 60;
/// Longest timeout or window accepted (an hour): longer is a typo, not a setting.
const MAX_SECS: u64 = 3600;

/// The `[serve]` section as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    max_body_bytes: Option<usize>,
    max_page: Option<usize>,
    max_query_bytes: Option<usize>,
    header_read_timeout_secs: Option<u64>,
    idle_timeout_secs: Option<u64>,
    request_body_timeout_secs: Option<u64>,
    max_connections: Option<usize>,
    max_in_flight: Option<usize>,
    rate_limit_requests: Option<u32>,
    rate_limit_window_secs: Option<u64>,
    #[serde(default)]
    cors_origins: Vec<String>,
    #[serde(default)]
    metrics_public: bool,
    #[serde(default)]
    tokens: Vec<RawToken>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    principal: String,
    token: Option<String>,
    token_env: Option<String>,
    namespaces: Vec<String>,
    #[serde(default)]
    answers: bool,
    #[serde(default)]
    erase: bool,
    rate_limit_requests: Option<u32>,
}

/// One bearer token: who it authenticates and which namespaces it reaches.
#[derive(Clone, Debug)]
pub struct TokenGrant {
    /// The principal (recorded as the source of its turns).
    pub principal: String,
    /// SHA-256 of the token (the token itself is not kept).
    digest: [u8; 32],
    /// The namespaces it reaches; `*` reaches all.
    pub namespaces: Vec<String>,
    /// It may answer and dismiss escalations: its word is recorded as a human's
    /// (`human:PRINCIPAL`), which the assessor trusts most, so an agent's own token must not.
    pub answers: bool,
    /// The `erase` scope: it may erase for good (`POST …/erase`; see docs/erasure.md). Off
    /// unless `erase = true`: an erasure cannot be undone.
    pub erase: bool,
    /// Requests it may make per rate-limit window (None: `serve.rate_limit_requests`; 0: no
    /// limit).
    pub rate_limit_requests: Option<u32>,
}

impl TokenGrant {
    /// A grant of `token` to `principal` on `namespaces`.
    pub fn new(principal: &str, token: &str, namespaces: &[&str]) -> Self {
        TokenGrant {
            principal: principal.to_string(),
            digest: digest(token),
            namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
            answers: false,
            erase: false,
            rate_limit_requests: None,
        }
    }
    /// The same grant, with the `erase` scope.
    pub fn erasing(mut self) -> Self {
        self.erase = true;
        self
    }
    /// The same grant, allowed to answer and dismiss escalations (a human's token).
    pub fn answering(mut self) -> Self {
        self.answers = true;
        self
    }
    /// Whether it reaches `namespace`.
    pub fn reaches(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|n| n == "*" || n == namespace)
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The server's settings.
#[derive(Clone, Debug)]
pub struct ServeSettings {
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
    /// Most memories one list page returns (at most `mnemo_agent::memories::MAX_PAGE`).
    pub max_page: usize,
    /// Longest recall query in bytes.
    pub max_query_bytes: usize,
    /// A request head must arrive whole within this, counted from the connection's accept or
    /// from its first byte after the previous answer.
    pub header_read_timeout: Duration,
    /// A kept-alive connection with no request in flight and no byte received for this long
    /// is closed.
    pub idle_timeout: Duration,
    /// Longest wait for the next piece of a request body (then 408 request_timeout).
    pub request_body_timeout: Duration,
    /// Most connections held at once; a connection above it is closed at accept.
    pub max_connections: usize,
    /// Most `/v1` requests handled at once; one above it gets 503 overloaded with Retry-After.
    pub max_in_flight: usize,
    /// Requests a token may make per window (0: no limit); a token's own value overrides it.
    pub rate_limit_requests: u32,
    /// The rate-limit window.
    pub rate_limit_window: Duration,
    /// Browser origins allowed to call the API (CORS); empty: no CORS headers at all.
    pub cors_origins: Vec<String>,
    /// `GET /metrics` answers without a token (else it needs a token reaching every namespace,
    /// since the figures are store-wide).
    pub metrics_public: bool,
    /// The bearer tokens.
    pub tokens: Vec<TokenGrant>,
}

impl ServeSettings {
    /// Settings with default limits and these tokens.
    pub fn with_tokens(tokens: Vec<TokenGrant>) -> Self {
        ServeSettings {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_page: mnemo_agent::memories::MAX_PAGE,
            max_query_bytes: DEFAULT_MAX_QUERY_BYTES,
            header_read_timeout: Duration::from_secs(DEFAULT_HEADER_READ_TIMEOUT_SECS),
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            request_body_timeout: Duration::from_secs(DEFAULT_REQUEST_BODY_TIMEOUT_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            rate_limit_requests: 0,
            rate_limit_window: Duration::from_secs(DEFAULT_RATE_LIMIT_WINDOW_SECS),
            cors_origins: Vec::new(),
            metrics_public: false,
            tokens,
        }
    }

    /// The rate limit of `grant`: requests per window, or None when it has none.
    pub fn rate_limit_of(&self, grant: &TokenGrant) -> Option<u32> {
        Some(grant.rate_limit_requests.unwrap_or(self.rate_limit_requests)).filter(|n| *n > 0)
    }

    /// From the `[serve]` table (`origin` names the file in errors); `env` reads the variables
    /// named by `token_env`. At least one token is required: a server nobody can call is a
    /// mistake, and one everybody can call is not offered.
    pub fn from_table(
        table: &toml::Table,
        origin: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ServerError> {
        let bad = |m: String| ServerError::Config { file: origin.to_string(), message: m };
        let raw = parse_raw(table).map_err(bad)?;
        let max_page = raw.max_page.unwrap_or(mnemo_agent::memories::MAX_PAGE);
        if max_page == 0 || max_page > mnemo_agent::memories::MAX_PAGE {
            return Err(bad(format!(
                "serve.max_page must be 1 to {}, got {max_page}",
                mnemo_agent::memories::MAX_PAGE
            )));
        }
        let max_body_bytes = raw.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if max_body_bytes < 1024 {
            return Err(bad(format!("serve.max_body_bytes must be at least 1024, got {max_body_bytes}")));
        }
        let max_query_bytes = raw.max_query_bytes.unwrap_or(DEFAULT_MAX_QUERY_BYTES);
        if max_query_bytes == 0 {
            return Err(bad("serve.max_query_bytes must be at least 1".into()));
        }
        let secs = |key: &str, given: Option<u64>, default: u64| match given.unwrap_or(default) {
            s @ 1..=MAX_SECS => Ok(Duration::from_secs(s)),
            s => Err(bad(format!("serve.{key} must be 1 to {MAX_SECS} seconds, got {s}"))),
        };
        let header_read_timeout =
            secs("header_read_timeout_secs", raw.header_read_timeout_secs, DEFAULT_HEADER_READ_TIMEOUT_SECS)?;
        let idle_timeout = secs("idle_timeout_secs", raw.idle_timeout_secs, DEFAULT_IDLE_TIMEOUT_SECS)?;
        let request_body_timeout =
            secs("request_body_timeout_secs", raw.request_body_timeout_secs, DEFAULT_REQUEST_BODY_TIMEOUT_SECS)?;
        let rate_limit_window =
            secs("rate_limit_window_secs", raw.rate_limit_window_secs, DEFAULT_RATE_LIMIT_WINDOW_SECS)?;
        let at_least_one = |key: &str, given: Option<usize>, default: usize| match given.unwrap_or(default) {
            0 => Err(bad(format!("serve.{key} must be at least 1, got 0"))),
            n => Ok(n),
        };
        let max_connections = at_least_one("max_connections", raw.max_connections, DEFAULT_MAX_CONNECTIONS)?;
        let max_in_flight = at_least_one("max_in_flight", raw.max_in_flight, DEFAULT_MAX_IN_FLIGHT)?;
        if max_in_flight > max_connections {
            return Err(bad(format!(
                "serve.max_in_flight ({max_in_flight}) must not exceed serve.max_connections ({max_connections}): \
                 each request in flight holds a connection"
            )));
        }
        for origin in &raw.cors_origins {
            check_origin(origin).map_err(|why| bad(format!("serve.cors_origins: {origin:?} {why}")))?;
        }
        if raw.tokens.is_empty() {
            return Err(bad("no [[serve.tokens]]: every request would be refused; declare at least one token \
                 (principal, token_env or token, namespaces)"
                .into()));
        }
        let mut tokens = Vec::new();
        for (i, t) in raw.tokens.iter().enumerate() {
            let at = format!("serve.tokens[{i}] ({})", t.principal);
            if t.principal.trim().is_empty() {
                return Err(bad(format!("serve.tokens[{i}].principal must not be empty")));
            }
            let token = match (&t.token, &t.token_env) {
                (Some(tok), None) => tok.clone(),
                (None, Some(var)) => env(var).ok_or_else(|| bad(format!("{at}: variable {var} is not set")))?,
                _ => return Err(bad(format!("{at}: give exactly one of token_env (preferred) or token"))),
            };
            if token.trim().len() < 16 {
                return Err(bad(format!("{at}: the token must be at least 16 characters")));
            }
            if t.namespaces.is_empty() {
                return Err(bad(format!("{at}: namespaces must name at least one namespace (or \"*\")")));
            }
            for n in t.namespaces.iter().filter(|n| n.as_str() != "*") {
                mnemo_contract::Namespace::new(n).map_err(|e| bad(format!("{at}: namespace {n:?}: {e}")))?;
            }
            let grant = TokenGrant {
                principal: t.principal.trim().to_string(),
                digest: digest(token.trim()),
                namespaces: t.namespaces.clone(),
                answers: t.answers,
                erase: t.erase,
                rate_limit_requests: t.rate_limit_requests,
            };
            if tokens.iter().any(|g: &TokenGrant| g.digest == grant.digest) {
                return Err(bad(format!("{at}: the same token is given twice")));
            }
            tokens.push(grant);
        }
        Ok(ServeSettings {
            max_body_bytes,
            max_page,
            max_query_bytes,
            header_read_timeout,
            idle_timeout,
            request_body_timeout,
            max_connections,
            max_in_flight,
            rate_limit_requests: raw.rate_limit_requests.unwrap_or(0),
            rate_limit_window,
            cors_origins: raw.cors_origins,
            metrics_public: raw.metrics_public,
            tokens,
        })
    }

    /// The grant a presented token matches (digests compared, so a match does not depend on
    /// where the first differing byte is).
    pub fn grant(&self, token: &str) -> Option<&TokenGrant> {
        self.grant_at(token).map(|(_, g)| g)
    }

    /// [`ServeSettings::grant`] with its place in `tokens` (what a per-token limit is kept by).
    pub fn grant_at(&self, token: &str) -> Option<(usize, &TokenGrant)> {
        let d = digest(token);
        self.tokens.iter().enumerate().find(|(_, g)| g.digest == d)
    }
}

/// The `[serve]` table read into [`Raw`]; an error names the key (`serve.idle_timeout_secs:
/// invalid value …`). The table is written back as TOML and read from that text, because a
/// value read from a table carries no place, and the place is how the key is found.
fn parse_raw(table: &toml::Table) -> Result<Raw, String> {
    let text = toml::to_string(table).map_err(|e| format!("in [serve]: {e}"))?;
    toml::from_str::<Raw>(&text).map_err(|e| {
        let message = mnemo_contract::text::toml_error(&e, None);
        match e.span().and_then(|span| key_at(&text, span.start)) {
            Some(key) => format!("{key}: {message}"),
            None => format!("in [serve]: {message}"),
        }
    })
}

/// The dotted key (`serve.max_page`, `serve.tokens[1].answers`) of the `key = value` line of
/// `text` (the `[serve]` table as TOML) holding byte `offset`.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(start..)?.lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    let tokens_before = text.get(..start)?.matches("[[tokens]]").count();
    Some(match tokens_before {
        0 => format!("serve.{key}"),
        n => format!("serve.tokens[{}].{key}", n - 1),
    })
}

/// Whether `origin` is a browser origin as a browser sends it: `http(s)://host[:port]`, no
/// path, no trailing slash (a CORS origin is compared byte for byte, so anything else would
/// silently never match). `*` is refused: name the origins that may call.
fn check_origin(origin: &str) -> Result<(), &'static str> {
    if origin == "*" {
        return Err("is refused: name each origin that may call (a wildcard lets any web page use a token it holds)");
    }
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .ok_or("must start with https:// or http://")?;
    if rest.is_empty() || rest.contains(['/', '?', '#', ' ']) {
        return Err("must be scheme://host[:port] with no path or trailing slash");
    }
    axum::http::HeaderValue::from_str(origin).map_err(|_| "is not a valid header value")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> Result<ServeSettings, ServerError> {
        let t: toml::Table = text.parse().unwrap();
        let env = |v: &str| (v == "TOK").then(|| "env-token-0123456789".to_string());
        ServeSettings::from_table(
            t.get("serve").and_then(|v| v.as_table()).unwrap_or(&toml::Table::new()),
            "f.toml",
            &env,
        )
    }

    #[test]
    fn tokens_from_env_or_inline_reach_their_namespaces() {
        let s = parse(
            "[[serve.tokens]]\nprincipal = \"ops\"\ntoken_env = \"TOK\"\nnamespaces = [\"a\"]\n\
             [[serve.tokens]]\nprincipal = \"root\"\ntoken = \"inline-token-0123456789\"\nnamespaces = [\"*\"]\n",
        )
        .unwrap();
        let ops = s.grant("env-token-0123456789").unwrap();
        assert_eq!(ops.principal, "ops");
        assert!(ops.reaches("a") && !ops.reaches("b"));
        assert!(s.grant("inline-token-0123456789").unwrap().reaches("anything"));
        assert!(s.grant("wrong").is_none());
    }

    #[test]
    fn bad_settings_are_refused_naming_the_key() {
        let e = parse(
            "[serve]\nmax_page = 0\n[[serve.tokens]]\nprincipal=\"a\"\ntoken=\"0123456789abcdef\"\nnamespaces=[\"a\"]",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("max_page"), "{e}");
        assert!(parse("[serve]\n").unwrap_err().to_string().contains("no [[serve.tokens]]"));
        let e =
            parse("[[serve.tokens]]\nprincipal=\"a\"\ntoken_env=\"NOPE\"\nnamespaces=[\"a\"]").unwrap_err().to_string();
        assert!(e.contains("NOPE is not set"), "{e}");
        let e =
            parse("[[serve.tokens]]\nprincipal=\"a\"\ntoken=\"short\"\nnamespaces=[\"a\"]").unwrap_err().to_string();
        assert!(e.contains("16 characters"), "{e}");
        let e = parse(&format!("[serve]\nmax_page = \"ten\"\n{TOKEN}")).unwrap_err().to_string();
        assert!(e.contains("serve.max_page:"), "{e}");
        let e = parse("[[serve.tokens]]\nprincipal=\"a\"\ntoken=\"0123456789abcdef\"\nnamespaces=[\"a\"]\nanswers = 1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("serve.tokens[0].answers:"), "{e}");
        let e = parse(
            "[serve]\nbogus = 1\n[[serve.tokens]]\nprincipal=\"a\"\ntoken=\"0123456789abcdef\"\nnamespaces=[\"a\"]",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bogus"), "{e}");
    }

    const TOKEN: &str = "[[serve.tokens]]\nprincipal=\"a\"\ntoken=\"0123456789abcdef\"\nnamespaces=[\"a\"]\n";

    #[test]
    fn guards_have_defaults_and_bad_values_name_their_key() {
        let s = parse(TOKEN).unwrap();
        assert_eq!(s.header_read_timeout, Duration::from_secs(DEFAULT_HEADER_READ_TIMEOUT_SECS));
        assert_eq!(s.idle_timeout, Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS));
        assert_eq!((s.max_in_flight, s.rate_limit_requests), (DEFAULT_MAX_IN_FLIGHT, 0));
        assert!(s.cors_origins.is_empty() && !s.metrics_public);
        assert_eq!(s.rate_limit_of(&s.tokens[0]), None, "no rate limit by default");
        for (line, key) in [
            ("header_read_timeout_secs = 0", "header_read_timeout_secs"),
            ("idle_timeout_secs = 7200", "idle_timeout_secs"),
            ("request_body_timeout_secs = 0", "request_body_timeout_secs"),
            ("rate_limit_window_secs = 0", "rate_limit_window_secs"),
            ("max_connections = 0", "max_connections"),
            ("max_in_flight = 0", "max_in_flight"),
            ("max_in_flight = 10\nmax_connections = 5", "max_in_flight"),
            ("cors_origins = [\"*\"]", "cors_origins"),
            ("cors_origins = [\"https://app.example/\"]", "cors_origins"),
            ("cors_origins = [\"app.example\"]", "cors_origins"),
            ("idle_timeout_secs = -1", "idle_timeout_secs"),
        ] {
            let e = parse(&format!("[serve]\n{line}\n{TOKEN}")).unwrap_err().to_string();
            assert!(e.contains(key), "{line}: {e}");
        }
    }

    #[test]
    fn a_token_may_carry_its_own_rate_limit() {
        let s = parse(&format!(
            "[serve]\nrate_limit_requests = 100\ncors_origins = [\"https://app.example:8443\"]\n{TOKEN}\
             [[serve.tokens]]\nprincipal=\"b\"\ntoken=\"fedcba9876543210\"\nnamespaces=[\"b\"]\nrate_limit_requests = 0\n"
        ))
        .unwrap();
        assert_eq!(s.rate_limit_of(&s.tokens[0]), Some(100));
        assert_eq!(s.rate_limit_of(&s.tokens[1]), None, "0 on the token: no limit for it");
        assert_eq!(s.grant_at("fedcba9876543210").map(|(i, _)| i), Some(1));
        assert_eq!(s.cors_origins, vec!["https://app.example:8443".to_string()]);
    }
}
