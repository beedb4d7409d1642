//! The PostgreSQL part of a scale site: one throw-away schema that both components share, and
//! reading its size and its server's memory. Compiled with the `postgres` feature; without it
//! a `postgres` component is refused by name (never measured as something else).
#[cfg(not(feature = "postgres"))]
use crate::error::{BenchError, Result};

use super::backend::Component;

/// The kind whose data lives in a PostgreSQL schema rather than in the data directory.
pub const POSTGRES: &str = "postgres";

#[cfg(feature = "postgres")]
pub use real::{throwaway_schema, Schema};

#[cfg(feature = "postgres")]
mod real {
    use mnemo_store_postgres::{Db, PgSettings};

    use super::{Component, POSTGRES};
    use crate::error::{BenchError, Result};

    /// A handle on the site's schema (throw-away: dropped with the last handle).
    pub type Schema = Db;

    /// A fresh schema for the PostgreSQL component(s) of `store`/`index` (or, with `keep`, the
    /// schema of that name, not dropped afterwards), written into their settings tables;
    /// `None` when neither is PostgreSQL.
    pub fn throwaway_schema(
        store: (&Component, &mut toml::Table),
        index: (&Component, &mut toml::Table),
        keep: Option<&str>,
    ) -> Result<Option<Schema>> {
        let pg = match (store.0.kind == POSTGRES, index.0.kind == POSTGRES) {
            (true, _) => store.0,
            (false, true) => index.0,
            (false, false) => return Ok(None),
        };
        let mut s: PgSettings = pg_settings(pg)?;
        // One throw-away schema for both components, held here rather than by them, so
        // that the index can be reopened on the same tables and their size read. The
        // prefix is short enough for the generated name to pass the schema-name check.
        // With `keep`, the schema of that name, kept after the run (for a later run to reuse).
        match keep {
            Some(name) => {
                s.schema = name.to_string();
                s.throwaway = false;
            }
            None => {
                s.schema = s.schema.chars().take(12).collect();
                s.throwaway = true;
            }
        }
        let keeper = Db::connect(&s).map_err(|e| BenchError::Arg(format!("{}: {e}", pg.origin)))?;
        let generated = keeper.schema().to_string();
        for (c, t) in [store, index] {
            if c.kind == POSTGRES {
                t.insert("schema".into(), toml::Value::String(generated.clone()));
                t.insert("throwaway".into(), toml::Value::Boolean(false));
            }
        }
        Ok(Some(keeper))
    }

    fn pg_settings(c: &Component) -> Result<PgSettings> {
        // The index section has more keys than the connection: keep those the connection knows.
        let mut t = toml::Table::new();
        for key in ["url", "schema", "pool_size"] {
            if let Some(v) = c.settings.get(key) {
                t.insert(key.to_string(), v.clone());
            }
        }
        t.try_into().map_err(|e| BenchError::Arg(format!("{}: {e}", c.origin)))
    }
}

/// No schema can exist in a build without PostgreSQL.
#[cfg(not(feature = "postgres"))]
pub enum Schema {}

#[cfg(not(feature = "postgres"))]
impl Schema {
    /// Unreachable: there is no value.
    pub async fn schema_bytes(&self) -> Result<u64> {
        match *self {}
    }
    /// Unreachable: there is no value.
    pub async fn server_memory_bytes(&self) -> Result<Option<u64>> {
        match *self {}
    }
    /// Unreachable: there is no value.
    pub async fn vacuum_analyze(&self) -> Result<()> {
        match *self {}
    }
    /// Unreachable: there is no value.
    pub async fn server_cpu_ns(&self) -> Result<Option<u64>> {
        match *self {}
    }
}

/// Without the `postgres` feature: an error naming the feature for a PostgreSQL component.
#[cfg(not(feature = "postgres"))]
pub fn throwaway_schema(
    store: (&Component, &mut toml::Table),
    index: (&Component, &mut toml::Table),
    _keep: Option<&str>,
) -> Result<Option<Schema>> {
    match [store.0, index.0].into_iter().find(|c| c.kind == POSTGRES) {
        Some(c) => Err(BenchError::Arg(format!(
            "{}: kind = \"postgres\": this build has no PostgreSQL backend (cargo feature `postgres`); \
             rebuild with `cargo install --path crates/mnemo-cli --features full`",
            c.origin
        ))),
        None => Ok(None),
    }
}
