//! A read-only grounder over a SQLite table (`[[grounders]] kind = "sqlite"`).
//!
//! ```toml
//! [[grounders]]
//! kind = "sqlite"
//! source = "clinic"
//! path = "records.db"       # relative to this config file; absolute paths are allowed
//! table = "current_values"
//! # column mapping (these are the defaults; as_of is optional and has no default):
//! entity = "entity"
//! attribute = "attribute"
//! value = "value"
//! as_of = "updated_at"      # RFC 3339 / YYYY-MM-DD text, or whole seconds since 1970
//! timeout_ms = 2000
//! ```
//!
//! The database is opened read-only and the connection set to `PRAGMA query_only`, so nothing
//! this grounder runs can change the system of record. Names compare trimmed and
//! case-insensitively (`lower(trim(column))`). Several distinct values on one
//! `(entity, attribute)` are ambiguous: an error, never one of them picked.
use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags};
use serde::Deserialize;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mnemo_contract::registry::GrounderContext;
use mnemo_contract::text::norm_value;
use mnemo_contract::{CoreError, GroundedValue, Grounder, GrounderErrorKind, Result, Timestamp};

use crate::common::{blocking, key, parse_as_of, timeout};

/// Table and column names.
#[derive(Clone, Debug, PartialEq)]
pub struct SqliteMapping {
    /// The table (or view).
    pub table: String,
    /// Entity column.
    pub entity: String,
    /// Attribute column.
    pub attribute: String,
    /// Value column.
    pub value: String,
    /// Optional as-of column.
    pub as_of: Option<String>,
}

/// A grounder over one SQLite table, opened read-only.
pub struct SqliteGrounder {
    source: String,
    conn: Arc<Mutex<Connection>>,
    sql: String,
    timeout: Option<Duration>,
}

fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl SqliteGrounder {
    /// Open `path` read-only (`query_only`) and check that the mapping names real columns.
    pub fn open(source: &str, path: &Path, map: &SqliteMapping) -> Result<Self> {
        let err_of = |kind, m: String| CoreError::grounder_message(kind, format!("{source} ({}): {m}", path.display()));
        // The file cannot be opened or read; a wrong mapping is `mapping_err`.
        let err = |m: String| err_of(GrounderErrorKind::Unavailable, m);
        let mapping_err = |m: String| err_of(GrounderErrorKind::Other, m);
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| err(e.to_string()))?;
        conn.pragma_update(None, "query_only", true).map_err(|e| err(e.to_string()))?;
        conn.busy_timeout(Duration::from_millis(500)).map_err(|e| err(e.to_string()))?;
        // SQLite reads a double-quoted name that is no column as a string literal, so the
        // mapping is checked against the table's real columns first.
        let columns: Vec<String> = {
            let mut st = conn.prepare("SELECT name FROM pragma_table_info(?1)").map_err(|e| err(e.to_string()))?;
            let names = st.query_map([&map.table], |r| r.get::<_, String>(0)).map_err(|e| err(e.to_string()))?;
            names.collect::<std::result::Result<_, _>>().map_err(|e| err(e.to_string()))?
        };
        if columns.is_empty() {
            return Err(mapping_err(format!("no table or view {:?}", map.table)));
        }
        for (what, c) in [
            ("entity", Some(&map.entity)),
            ("attribute", Some(&map.attribute)),
            ("value", Some(&map.value)),
            ("as_of", map.as_of.as_ref()),
        ] {
            if let Some(c) = c.filter(|c| !columns.iter().any(|x| x == *c)) {
                return Err(mapping_err(format!(
                    "table {:?} has no {what} column {c:?} (columns: {})",
                    map.table,
                    columns.join(", ")
                )));
            }
        }
        let as_of = map.as_of.as_deref().map(ident).unwrap_or_else(|| "NULL".into());
        let sql = format!(
            "SELECT DISTINCT {v}, {as_of} FROM {t} WHERE lower(trim({e})) = ?1 AND lower(trim({a})) = ?2 LIMIT 16",
            v = ident(&map.value),
            t = ident(&map.table),
            e = ident(&map.entity),
            a = ident(&map.attribute),
        );
        // prepare once now: a wrong table or column name fails at start-up, naming it
        conn.prepare(&sql).map_err(|e| {
            mapping_err(format!(
                "{e} (table {:?}, columns {:?}/{:?}/{:?})",
                map.table, map.entity, map.attribute, map.value
            ))
        })?;
        Ok(SqliteGrounder { source: source.to_string(), conn: Arc::new(Mutex::new(conn)), sql, timeout: None })
    }

    fn query(
        conn: &Mutex<Connection>,
        sql: &str,
        e: &str,
        a: &str,
    ) -> std::result::Result<Vec<(String, Option<String>)>, String> {
        let conn = conn.lock().map_err(|_| "connection poisoned".to_string())?;
        let mut st = conn.prepare_cached(sql).map_err(|e| e.to_string())?;
        let text = |v: rusqlite::types::ValueRef<'_>| -> Option<String> {
            use rusqlite::types::ValueRef::*;
            match v {
                Null => None,
                Integer(i) => Some(i.to_string()),
                Real(f) => Some(f.to_string()),
                Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                Blob(_) => Some(String::new()),
            }
        };
        let rows =
            st.query_map([e, a], |r| Ok((text(r.get_ref(0)?), text(r.get_ref(1)?)))).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for r in rows {
            let (v, t) = r.map_err(|e| e.to_string())?;
            out.push((v.unwrap_or_default(), t));
        }
        Ok(out)
    }
}

fn as_of(t: &str) -> std::result::Result<Timestamp, String> {
    match t.trim().parse::<i64>() {
        Ok(secs) => Ok(Timestamp::from_millis(secs.saturating_mul(1000))),
        Err(_) => parse_as_of(t),
    }
}

#[async_trait]
impl Grounder for SqliteGrounder {
    fn source(&self) -> &str {
        &self.source
    }
    async fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<GroundedValue>> {
        let (e, a) = key(entity, attribute);
        let (conn, sql, src) = (self.conn.clone(), self.sql.clone(), self.source.clone());
        let rows = blocking(&self.source, move || {
            Self::query(&conn, &sql, &e, &a)
                .map_err(|m| CoreError::grounder_message(GrounderErrorKind::Unavailable, format!("{src}: {m}")))
        })
        .await?;
        let mut values: Vec<(String, Option<String>)> = Vec::new();
        for (v, t) in rows {
            let v = norm_value(&v);
            if !values.iter().any(|(x, _)| *x == v) {
                values.push((v, t));
            }
        }
        match values.as_slice() {
            [] => Ok(None),
            [(v, t)] => {
                let as_of = t.as_deref().map(as_of).transpose().map_err(|m| {
                    let m = format!("{}: {entity} | {attribute}: {m}", self.source);
                    CoreError::grounder_message(GrounderErrorKind::BadAnswer, m)
                })?;
                Ok(Some(GroundedValue { value: v.clone(), source: self.source.clone(), as_of }))
            }
            many => Err(CoreError::grounder_message(
                GrounderErrorKind::BadAnswer,
                format!(
                    "{}: {entity} | {attribute} has {} values; one value cannot be confirmed or corrected",
                    self.source,
                    many.len()
                ),
            )),
        }
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    source: String,
    path: String,
    table: String,
    #[serde(default)]
    entity: Option<String>,
    #[serde(default)]
    attribute: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    as_of: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

fn build(ctx: &GrounderContext<'_>) -> Result<Arc<dyn Grounder>> {
    let s: Settings = ctx.settings()?;
    if s.source.trim().is_empty() || s.table.trim().is_empty() {
        return Err(CoreError::Config(format!("{}: source and table must not be empty", ctx.origin)));
    }
    let map = SqliteMapping {
        table: s.table,
        entity: s.entity.unwrap_or_else(|| "entity".into()),
        attribute: s.attribute.unwrap_or_else(|| "attribute".into()),
        value: s.value.unwrap_or_else(|| "value".into()),
        as_of: s.as_of,
    };
    let path = ctx.config_path(&s.path)?;
    if !path.is_file() {
        return Err(CoreError::Config(format!("{}: no database file at {}", ctx.origin, path.display())));
    }
    let mut g = SqliteGrounder::open(s.source.trim(), &path, &map)
        .map_err(|e| CoreError::Config(format!("{}: {e}", ctx.origin)))?;
    g.timeout = timeout(s.timeout_ms, ctx.origin)?;
    Ok(Arc::new(g))
}

mnemo_contract::register_grounder!(
    "sqlite",
    "read-only SQLite table (query_only) mapped to entity, attribute, value[, as_of]",
    build
);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn the_connection_refuses_writes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.db");
        let c = Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE t(entity TEXT, attribute TEXT, value TEXT); INSERT INTO t VALUES('a','b','c');")
            .unwrap();
        drop(c);
        let map = SqliteMapping {
            table: "t".into(),
            entity: "entity".into(),
            attribute: "attribute".into(),
            value: "value".into(),
            as_of: None,
        };
        let g = SqliteGrounder::open("rec", &p, &map).unwrap();
        let conn = g.conn.lock().unwrap();
        assert!(conn.execute("INSERT INTO t VALUES('x','y','z')", []).is_err());
        assert!(conn.execute("UPDATE t SET value = 'evil'", []).is_err());
        assert!(
            conn.execute_batch("PRAGMA query_only = OFF; DELETE FROM t;").is_err(),
            "read-only open, not just query_only"
        );
    }
}
