//! Connection settings shared by the Store and the Index (`[store]` / `[index]` sections).
use serde::Deserialize;

use crate::error::PgError;

/// The environment variable naming the server when `url` is not set.
pub const URL_ENV: &str = "MNEMO_POSTGRES_URL";

/// Where and how to connect.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PgSettings {
    /// `postgres://user:password@host:port/db`; empty: the environment's `MNEMO_POSTGRES_URL`.
    #[serde(default)]
    pub url: String,
    /// The PostgreSQL schema holding Mnemo's tables.
    #[serde(default = "default_schema")]
    pub schema: String,
    /// A fresh schema of its own for this process, dropped when the component is dropped
    /// (eval runs, tests): `schema` is then only the prefix of its name.
    #[serde(default)]
    pub throwaway: bool,
    /// Connections in the pool.
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
}

fn default_schema() -> String {
    "mnemo".to_string()
}

fn default_pool_size() -> usize {
    16
}

impl Default for PgSettings {
    fn default() -> Self {
        PgSettings { url: String::new(), schema: default_schema(), throwaway: false, pool_size: default_pool_size() }
    }
}

impl PgSettings {
    /// Settings for `url` (schema `mnemo`).
    pub fn new(url: &str) -> Self {
        PgSettings { url: url.to_string(), ..Default::default() }
    }

    /// The URL: `url`, else `$MNEMO_POSTGRES_URL`; an error says how to give one.
    pub fn resolved_url(&self) -> Result<String, PgError> {
        if !self.url.trim().is_empty() {
            return Ok(self.url.trim().to_string());
        }
        match std::env::var(URL_ENV) {
            Ok(u) if !u.trim().is_empty() => Ok(u.trim().to_string()),
            _ => Err(PgError::Settings(format!(
                "no server named: set `url = \"postgres://…\"` in the section or the environment variable {URL_ENV} \
                 (scripts/pg-test-server start DIR prints one)"
            ))),
        }
    }

    /// Check the keys; the error names the key.
    pub fn validate(&self) -> Result<(), PgError> {
        check_schema_name(&self.schema)?;
        // Two at least: a writer holds one for its namespace lock while its batch takes another.
        if self.pool_size < 2 || self.pool_size > 1000 {
            return Err(PgError::Settings(format!("pool_size = {} must be 2..=1000", self.pool_size)));
        }
        Ok(())
    }
}

/// A schema name we create and quote ourselves: lower-case letters, digits and `_`, starting
/// with a letter or `_`, at most 40 characters (room for a throw-away suffix).
pub fn check_schema_name(s: &str) -> Result<(), PgError> {
    let ok = !s.is_empty()
        && s.len() <= 40
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && !s.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(PgError::Settings(format!(
            "schema = {s:?} must be 1-40 characters of a-z, 0-9 and '_', not starting with a digit or 'pg_'"
        )))
    }
}
