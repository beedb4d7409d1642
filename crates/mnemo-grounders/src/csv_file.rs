//! A read-only grounder over a CSV file (`[[grounders]] kind = "csv"`).
//!
//! ```toml
//! [[grounders]]
//! kind = "csv"
//! source = "erp"
//! path = "erp.csv"          # relative to this config file; absolute paths are allowed
//! # columns, by header name (these are the defaults; as_of is optional):
//! entity = "entity"
//! attribute = "attribute"
//! value = "value"
//! as_of = "as_of"
//! timeout_ms = 2000         # optional; default: the assessor's grounder_timeout_ms
//! ```
//!
//! A real CSV reader: quoted fields (commas, quotes and line breaks inside them), a header row
//! naming the columns, other columns ignored, a UTF-8 byte-order mark skipped, `#` comment lines.
//! The file is re-read when its modification time or size changes. One `(entity, attribute)`
//! on several rows with different values is ambiguous (a many-valued attribute): looking it up
//! is an error, so it can never confirm or overwrite one of the values.
use async_trait::async_trait;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use mnemo_contract::registry::GrounderContext;
use mnemo_contract::text::norm_value;
use mnemo_contract::{CoreError, GroundedValue, Grounder, GrounderErrorKind, Result, Timestamp};

use crate::common::{blocking, key, parse_as_of, timeout};

/// A row's answer: one value, or several (ambiguous).
#[derive(Clone, Debug, PartialEq)]
enum Cell {
    One(String, Option<Timestamp>),
    Many(Vec<String>),
}

type Rows = HashMap<(String, String), Cell>;
type Stamp = (SystemTime, u64);
/// The table as last read, with the file's (modification time, size) then.
type Cache = Mutex<Option<(Stamp, Arc<Rows>)>>;

/// Header names of the mapped columns.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CsvColumns {
    /// Entity column.
    pub entity: String,
    /// Attribute column.
    pub attribute: String,
    /// Value column.
    pub value: String,
    /// Optional as-of column (used when the header has it).
    pub as_of: String,
}

impl Default for CsvColumns {
    fn default() -> Self {
        CsvColumns {
            entity: "entity".into(),
            attribute: "attribute".into(),
            value: "value".into(),
            as_of: "as_of".into(),
        }
    }
}

/// A grounder over a CSV file with a header row.
pub struct CsvGrounder {
    source: String,
    path: PathBuf,
    columns: CsvColumns,
    timeout: Option<Duration>,
    cache: Arc<Cache>,
}

impl CsvGrounder {
    /// A grounder named `source` over `path` with the default column names.
    pub fn new(source: &str, path: PathBuf) -> Self {
        Self::with_columns(source, path, CsvColumns::default())
    }
    /// With other column names.
    pub fn with_columns(source: &str, path: PathBuf, columns: CsvColumns) -> Self {
        CsvGrounder { source: source.to_string(), path, columns, timeout: None, cache: Arc::default() }
    }
    /// Read (or reuse) the table as the file is now.
    fn rows(source: &str, path: &Path, columns: &CsvColumns, cache: &Cache) -> Result<Arc<Rows>> {
        let err_of = |kind, m: String| CoreError::grounder_message(kind, format!("{source} ({}): {m}", path.display()));
        // The file cannot be read; one that is not the CSV the columns describe is `bad_file`.
        let err = |m: String| err_of(GrounderErrorKind::Unavailable, m);
        let bad_file = |m: String| err_of(GrounderErrorKind::BadAnswer, m);
        let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
        let stamp = (meta.modified().map_err(|e| err(e.to_string()))?, meta.len());
        if let Ok(c) = cache.lock() {
            if let Some((at, rows)) = c.as_ref() {
                if *at == stamp {
                    return Ok(rows.clone());
                }
            }
        }
        let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
        let rows = Arc::new(parse(&bytes, columns).map_err(bad_file)?);
        if let Ok(mut c) = cache.lock() {
            *c = Some((stamp, rows.clone()));
        }
        Ok(rows)
    }
    /// Check the file now (used at start-up so a broken path is a config error).
    pub fn check(&self) -> Result<usize> {
        Ok(Self::rows(&self.source, &self.path, &self.columns, &self.cache)?.len())
    }
}

/// Parse CSV bytes into rows. Errors name the line and column and what was expected, never a
/// cell's text: the file may be anything (a path can point at `/etc/shadow`), and an error is
/// printed, logged and sent to clients.
fn parse(bytes: &[u8], cols: &CsvColumns) -> std::result::Result<Rows, String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let header = rd.headers().map_err(|e| format!("the header: {}", csv_error(&e)))?.clone();
    let header_line = header.position().map(|p| p.line()).unwrap_or(1);
    let find = |name: &str| header.iter().position(|h| h.eq_ignore_ascii_case(name.trim()));
    let need = |name: &str, what: &str| {
        find(name).ok_or_else(|| {
            format!(
                "line {header_line}: the header row has no {what} column named {name:?} ({} columns; expected a \
                 header row naming the entity, attribute and value columns)",
                header.len()
            )
        })
    };
    let (ei, ai, vi) =
        (need(&cols.entity, "entity")?, need(&cols.attribute, "attribute")?, need(&cols.value, "value")?);
    let ti = find(&cols.as_of);
    let mut rows = Rows::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| csv_error(&e))?;
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        let field = |i: usize, what: &str| {
            rec.get(i)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("line {line}, column {}: no {what} (an empty or missing cell)", i + 1))
        };
        let (e, a, v) = (field(ei, "entity")?, field(ai, "attribute")?, field(vi, "value")?);
        let as_of = match ti.and_then(|i| rec.get(i).map(|t| (i, t))).filter(|(_, t)| !t.is_empty()) {
            Some((i, t)) => Some(parse_as_of(t).map_err(|m| format!("line {line}, column {}: {m}", i + 1))?),
            None => None,
        };
        let value = norm_value(v);
        let k = key(e, a);
        let cell = match rows.remove(&k) {
            None => Cell::One(value, as_of),
            Some(Cell::One(old, t)) if old == value => Cell::One(old, t.max(as_of)),
            Some(Cell::One(old, _)) => Cell::Many(vec![old, value]),
            Some(Cell::Many(mut vs)) => {
                if !vs.contains(&value) {
                    vs.push(value);
                }
                Cell::Many(vs)
            }
        };
        rows.insert(k, cell);
    }
    Ok(rows)
}

/// A CSV reader's error as where and what, without the text it read (the csv crate's own
/// message is kept only for kinds that hold no field text).
fn csv_error(e: &csv::Error) -> String {
    let at = |p: Option<&csv::Position>| match p {
        Some(p) => format!("line {} (byte {})", p.line(), p.byte()),
        None => "an unknown line".to_string(),
    };
    match e.kind() {
        csv::ErrorKind::Utf8 { pos, err } => format!(
            "{}, column {}: not UTF-8 (an invalid byte {} bytes into the cell; expected UTF-8 text)",
            at(pos.as_ref()),
            err.field() + 1,
            err.valid_up_to()
        ),
        csv::ErrorKind::UnequalLengths { pos, expected_len, len } => {
            format!("{}: {len} columns where the rows before have {expected_len}", at(pos.as_ref()))
        }
        csv::ErrorKind::Io(io) => format!("cannot read: {}", io.kind()),
        _ => "not a CSV file with a header row".to_string(),
    }
}

#[async_trait]
impl Grounder for CsvGrounder {
    fn source(&self) -> &str {
        &self.source
    }
    async fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<GroundedValue>> {
        let (source, path, columns, cache) =
            (self.source.clone(), self.path.clone(), self.columns.clone(), self.cache.clone());
        let rows = blocking(&self.source, move || Self::rows(&source, &path, &columns, &cache)).await?;
        match rows.get(&key(entity, attribute)) {
            None => Ok(None),
            Some(Cell::One(v, at)) => {
                Ok(Some(GroundedValue { value: v.clone(), source: self.source.clone(), as_of: *at }))
            }
            Some(Cell::Many(vs)) => Err(CoreError::grounder_message(
                GrounderErrorKind::BadAnswer,
                format!(
                    "{}: {entity} | {attribute} has {} values ({}); one value cannot be confirmed or corrected",
                    self.source,
                    vs.len(),
                    vs.join(", ")
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
    if s.source.trim().is_empty() {
        return Err(CoreError::Config(format!("{}: source must not be empty", ctx.origin)));
    }
    let d = CsvColumns::default();
    let columns = CsvColumns {
        entity: s.entity.unwrap_or(d.entity),
        attribute: s.attribute.unwrap_or(d.attribute),
        value: s.value.unwrap_or(d.value),
        as_of: s.as_of.unwrap_or(d.as_of),
    };
    let mut g = CsvGrounder::with_columns(s.source.trim(), ctx.config_path(&s.path)?, columns);
    g.timeout = timeout(s.timeout_ms, ctx.origin)?;
    // a wrong path or header is a configuration error, said at start-up
    g.check().map_err(|e| CoreError::Config(format!("{}: {e}", ctx.origin)))?;
    Ok(Arc::new(g))
}

mnemo_contract::register_grounder!(
    "csv",
    "read-only CSV file with a header (entity, attribute, value[, as_of]); re-read on change",
    build
);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn quoted_fields_bom_comments_and_extra_columns() {
        let text = "\u{feff}entity,attribute,value,as_of,note\n# an export\n\"Maria Lopez\",\"metformin dose\",\"500 mg, twice daily\",2026-03-08,\"said \"\"ok\"\"\"\n";
        let rows = parse(text.as_bytes(), &CsvColumns::default()).unwrap();
        let cell = rows.get(&key("maria lopez", "Metformin Dose")).unwrap();
        let at = parse_as_of("2026-03-08").unwrap();
        assert_eq!(cell, &Cell::One("500 mg, twice daily".into(), Some(at)));
    }

    #[test]
    fn missing_column_and_bad_rows_are_named() {
        let e = parse(b"hunter2,attribute,value\na,b,c\n", &CsvColumns::default()).unwrap_err();
        assert!(e.contains("line 1") && e.contains("entity") && !e.contains("hunter2"), "{e}");
        let e = parse(b"entity,attribute,value\na,b,c\nx,y\n", &CsvColumns::default()).unwrap_err();
        assert!(e.contains("line 3, column 3") && e.contains("value"), "{e}");
        let e = parse(b"entity,attribute,value,as_of\na,b,c,yesterday\n", &CsvColumns::default()).unwrap_err();
        assert!(e.contains("line 2, column 4") && e.contains("as_of") && !e.contains("yesterday"), "{e}");
        let e = parse(b"entity,attribute,value\na,b,c\nsecret\xff\xfe,y,z\n", &CsvColumns::default()).unwrap_err();
        assert!(e.contains("line 3") && e.contains("column 1") && e.contains("UTF-8") && !e.contains("secret"), "{e}");
        let e = parse(b"top\xffsecret,b\n", &CsvColumns::default()).unwrap_err();
        assert!(e.contains("header") && !e.contains("secret"), "{e}");
    }

    const SHADOW: &str = "root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n";

    /// A grounder pointed at a file that is no CSV of its own (`/etc/shadow`), directly,
    /// through `..` and through a symlink: the error names the file and the line, never a cell.
    #[test]
    fn a_foreign_file_is_never_echoed() {
        let d = tempfile::tempdir().unwrap();
        let secret = d.path().join("shadow");
        std::fs::write(&secret, SHADOW).unwrap();
        std::fs::create_dir(d.path().join("conf")).unwrap();
        let link = d.path().join("conf/link.csv");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        #[cfg(not(unix))]
        std::fs::copy(&secret, &link).unwrap();
        for path in [secret.clone(), d.path().join("conf/../shadow"), link] {
            let e = CsvGrounder::new("erp", path.clone()).check().unwrap_err().to_string();
            assert!(e.contains(&path.display().to_string()) && e.contains("line 1"), "{e}");
            for secret_text in ["root", "20228", "99999", "daemon"] {
                assert!(!e.contains(secret_text), "{secret_text} echoed: {e}");
            }
        }
    }

    #[test]
    fn configurable_columns() {
        let cols = CsvColumns {
            entity: "sku".into(),
            attribute: "field".into(),
            value: "current".into(),
            as_of: "updated".into(),
        };
        let rows = parse(b"current,sku,field\n35 days,IC-MC-44,lead time\n", &cols).unwrap();
        assert_eq!(rows.get(&key("IC-MC-44", "lead time")), Some(&Cell::One("35 days".into(), None)));
    }
}
