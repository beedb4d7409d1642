//! `[serve]` settings: limits and the bearer tokens, each reaching a list of namespaces.
//!
//! ```toml
//! [serve]
//! max_body_bytes = 2097152     # larger request bodies get 413 payload_too_large
//! max_page = 1000              # most memories one list page returns
//! max_query_bytes = 4096       # longest recall query
//!
//! [[serve.tokens]]
//! principal = "ops-bot"        # the authenticated source its turns are recorded under
//! token_env = "MNEMO_TOKEN_OPS" # the NAME of the variable holding the token (or token = "…")
//! namespaces = ["ops", "shared"] # "*" reaches every namespace
//! answers = false              # may answer or dismiss escalations (a human's word: default false)
//! ```
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::ServerError;

/// Default largest request body: a turn of the engine's maximum (1 MiB) fits with room for JSON
/// escaping.
pub const DEFAULT_MAX_BODY_BYTES: usize = 2 << 20;
/// Default longest recall query.
pub const DEFAULT_MAX_QUERY_BYTES: usize = 4096;

/// The `[serve]` section as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    max_body_bytes: Option<usize>,
    max_page: Option<usize>,
    max_query_bytes: Option<usize>,
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
}

impl TokenGrant {
    /// A grant of `token` to `principal` on `namespaces`.
    pub fn new(principal: &str, token: &str, namespaces: &[&str]) -> Self {
        TokenGrant {
            principal: principal.to_string(),
            digest: digest(token),
            namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
            answers: false,
        }
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
            tokens,
        }
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
        let raw: Raw = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| bad(format!("in [serve]: {}", mnemo_core::text::toml_error(&e, None))))?;
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
                mnemo_core::Namespace::new(n).map_err(|e| bad(format!("{at}: namespace {n:?}: {e}")))?;
            }
            let grant = TokenGrant {
                principal: t.principal.trim().to_string(),
                digest: digest(token.trim()),
                namespaces: t.namespaces.clone(),
                answers: t.answers,
            };
            if tokens.iter().any(|g: &TokenGrant| g.digest == grant.digest) {
                return Err(bad(format!("{at}: the same token is given twice")));
            }
            tokens.push(grant);
        }
        Ok(ServeSettings { max_body_bytes, max_page, max_query_bytes, tokens })
    }

    /// The grant a presented token matches (digests compared, so a match does not depend on
    /// where the first differing byte is).
    pub fn grant(&self, token: &str) -> Option<&TokenGrant> {
        let d = digest(token);
        self.tokens.iter().find(|g| g.digest == d)
    }
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
        let e = parse(
            "[serve]\nbogus = 1\n[[serve.tokens]]\nprincipal=\"a\"\ntoken=\"0123456789abcdef\"\nnamespaces=[\"a\"]",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bogus"), "{e}");
    }
}
