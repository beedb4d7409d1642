//! An example **static** plugin: a read-only Grounder over an ERP/inventory CSV export.
//!
//! A plugin is an ordinary crate that registers a factory with
//! `mnemo_core::register_plugin!`; a binary that links it (`use mnemo_plugin_erp as _;`) can
//! then name it in config:
//!
//! ```toml
//! [[grounders]]
//! kind = "erp_csv"
//! source = "erp"
//! path = "erp.csv"      # relative to this config file; lines: entity,attribute,value
//! ```
//!
//! The file is re-read when it changes (by modification time), so the grounder always answers
//! from the system of record as it is now. It never writes.
#![deny(missing_docs)]

use async_trait::async_trait;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use mnemo_core::registry::{BuildContext, Component, Role};
use mnemo_core::text::{norm_name, norm_value};
use mnemo_core::{CoreError, GroundedValue, Grounder, Result};

type Rows = HashMap<(String, String), String>;

/// A grounder over a CSV file of `entity,attribute,value` records (quoted fields allowed; a
/// header line `entity,attribute,value` is skipped; `#` starts a comment line; further columns
/// are ignored).
pub struct CsvGrounder {
    source: String,
    path: PathBuf,
    cache: Mutex<Option<(SystemTime, Arc<Rows>)>>,
}

impl CsvGrounder {
    /// A grounder named `source` over the file at `path`.
    pub fn new(source: &str, path: PathBuf) -> Self {
        CsvGrounder { source: source.to_string(), path, cache: Mutex::new(None) }
    }

    fn rows(&self) -> Result<Arc<Rows>> {
        let err = |m: String| CoreError::Grounder(format!("{} ({}): {m}", self.source, self.path.display()));
        let modified = std::fs::metadata(&self.path).and_then(|m| m.modified()).map_err(|e| err(e.to_string()))?;
        let mut cache = self.cache.lock().map_err(|_| err("cache poisoned".into()))?;
        if let Some((at, rows)) = cache.as_ref() {
            if *at == modified {
                return Ok(rows.clone());
            }
        }
        let bytes = std::fs::read(&self.path).map_err(|e| err(e.to_string()))?;
        let text =
            String::from_utf8(bytes).map_err(|e| err(format!("not UTF-8 at byte {}", e.utf8_error().valid_up_to())))?;
        let rows = Arc::new(parse(&text).map_err(err)?);
        *cache = Some((modified, rows.clone()));
        Ok(rows)
    }
}

fn parse(text: &str) -> std::result::Result<Rows, String> {
    // The `csv` crate reads quoted fields (commas and quotes inside values); a header row
    // `entity,attribute,value` is skipped, other columns are ignored, `#` starts a comment.
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
    let mut rows = Rows::new();
    for (n, rec) in rd.records().enumerate() {
        let rec = rec.map_err(|e| e.to_string())?;
        let line = rec.position().map_or(n + 1, |p| p.line() as usize);
        let is_header = n == 0
            && rec.get(0).is_some_and(|f| f.eq_ignore_ascii_case("entity"))
            && rec.get(1).is_some_and(|f| f.eq_ignore_ascii_case("attribute"));
        if is_header {
            continue;
        }
        match (rec.get(0), rec.get(1), rec.get(2)) {
            (Some(e), Some(a), Some(v)) if !e.is_empty() && !a.is_empty() && !v.is_empty() => {
                rows.insert((norm_name(e), norm_name(a)), norm_value(v));
            }
            _ => {
                return Err(format!(
                    "line {line}: expected entity,attribute,value, got {:?}",
                    rec.iter().collect::<Vec<_>>()
                ))
            }
        }
    }
    Ok(rows)
}

#[async_trait]
impl Grounder for CsvGrounder {
    fn source(&self) -> &str {
        &self.source
    }
    async fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<GroundedValue>> {
        let rows = self.rows()?;
        Ok(rows.get(&(norm_name(entity), norm_name(attribute))).map(|v| GroundedValue {
            value: v.clone(),
            source: self.source.clone(),
            as_of: None,
        }))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    source: String,
    path: String,
}

fn build(ctx: &BuildContext<'_>) -> Result<Component> {
    let s: Settings = ctx.settings()?;
    let path = ctx.config_path(&s.path)?;
    let g = CsvGrounder::new(&s.source, path);
    // fail at start-up, not on the first recall, when the file is missing or malformed
    g.rows().map_err(|e| CoreError::Config(format!("{}: {e}", ctx.origin)))?;
    Ok(Component::Grounder(Arc::new(g)))
}

mnemo_core::register_plugin!(
    Role::Grounder,
    "erp_csv",
    "example plugin: ERP/inventory CSV export (entity,attribute,value)",
    build
);

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_core::conformance::grounder;

    #[tokio::test]
    async fn conforms_and_rereads_on_change() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("erp.csv");
        let mut text = String::from("entity,attribute,value\n# export of today\n");
        for (e, a, v) in grounder::ROWS {
            text.push_str(&format!("{e},{a},{v}\n"));
        }
        std::fs::write(&p, &text).unwrap();
        let g = Arc::new(CsvGrounder::new("erp", p.clone()));
        grounder::run_all(g.clone()).await;
        // the world changes: a later export
        std::fs::write(&p, text.replace("35 days", "42 days")).unwrap();
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(2_000_000_000);
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(t).unwrap();
        let v = g.lookup("IC-MC-44 from S-208", "lead time").await.unwrap().unwrap();
        assert_eq!(v.value, "42 days");
    }

    #[test]
    fn malformed_lines_are_named() {
        let e = parse("a,b,c\nbroken line\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn quoted_fields_and_extra_columns() {
        let rows = parse("\"Maria Lopez\",\"metformin dose\",\"250 mg, once daily\",2026-03-08\n").unwrap();
        let v = rows.get(&(norm_name("Maria Lopez"), norm_name("metformin dose")));
        assert_eq!(v.map(String::as_str), Some("250 mg, once daily"));
    }
}
