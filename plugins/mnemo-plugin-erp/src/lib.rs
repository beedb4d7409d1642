//! An example **dynamic** plugin: a read-only Grounder over an ERP/inventory CSV export,
//! built as a shared library and loaded from config:
//!
//! ```toml
//! [[plugins]]
//! path = "../../target/debug/mnemo_plugin_erp"   # relative to this config file
//!
//! [[grounders]]
//! kind = "erp_csv"
//! source = "erp"
//! path = "erp.csv"      # relative to the data directory; rows: entity,attribute,value
//! ```
//!
//! The file is standard CSV (quote a value that holds a comma); an optional header row
//! `entity,attribute,value` is skipped and `#` starts a comment line. It is re-read when it
//! changes (by modification time), so the grounder answers from the system of record as it is
//! now. It never writes.
#![deny(missing_docs)]

use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use mnemo_plugin_sdk::{export_plugin, Grounded, GrounderPlugin, PluginError, Settings};

type Rows = HashMap<(String, String), String>;

/// Case- and white-space-insensitive key (the engine compares claims the same way).
fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Values keep their case; white space is folded.
fn fold(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A grounder over a CSV file of `entity,attribute,value` rows.
pub struct CsvGrounder {
    source: String,
    path: PathBuf,
    cache: Mutex<Option<(SystemTime, Arc<Rows>)>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErpSettings {
    source: String,
    path: String,
}

impl CsvGrounder {
    /// A grounder named `source` over the file at `path`.
    pub fn open(source: &str, path: PathBuf) -> Self {
        CsvGrounder { source: source.to_string(), path, cache: Mutex::new(None) }
    }

    fn rows(&self) -> Result<Arc<Rows>, PluginError> {
        let err = |m: String| PluginError(format!("{} ({}): {m}", self.source, self.path.display()));
        let modified = std::fs::metadata(&self.path).and_then(|m| m.modified()).map_err(|e| err(e.to_string()))?;
        let mut cache = self.cache.lock().map_err(|_| err("cache poisoned".into()))?;
        if let Some((at, rows)) = cache.as_ref() {
            if *at == modified {
                return Ok(rows.clone());
            }
        }
        let bytes = std::fs::read(&self.path).map_err(|e| err(e.to_string()))?;
        let rows = Arc::new(parse(&bytes).map_err(err)?);
        *cache = Some((modified, rows.clone()));
        Ok(rows)
    }
}

fn parse(bytes: &[u8]) -> Result<Rows, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .comment(Some(b'#'))
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let mut rows = Rows::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(|e| e.to_string())?;
        let line = record.position().map(|p| p.line()).unwrap_or(0);
        let fields: Vec<&str> = record.iter().collect();
        if i == 0 && fields.iter().map(|f| f.to_lowercase()).eq(["entity", "attribute", "value"]) {
            continue;
        }
        match fields.as_slice() {
            [e, a, v] if !e.is_empty() && !a.is_empty() && !v.is_empty() => {
                rows.insert((norm(e), norm(a)), fold(v));
            }
            _ => {
                return Err(format!(
                    "line {line}: expected 3 non-empty fields entity,attribute,value (quote a value holding a comma), got {}",
                    fields.len()
                ))
            }
        }
    }
    Ok(rows)
}

impl GrounderPlugin for CsvGrounder {
    const KIND: &'static str = "erp_csv";
    const ABOUT: &'static str = "example plugin: ERP/inventory CSV export (entity,attribute,value)";

    fn new(settings: &Settings) -> Result<Self, PluginError> {
        let s: ErpSettings = settings.parse()?;
        let g = CsvGrounder::open(&s.source, settings.data_path(&s.path)?);
        // fail at start-up, not on the first recall, when the file is missing or malformed
        g.rows().map_err(|e| PluginError(format!("{}: {e}", settings.origin())))?;
        Ok(g)
    }

    fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<Grounded>, PluginError> {
        let rows = self.rows()?;
        Ok(rows.get(&(norm(entity), norm(attribute))).map(|v| Grounded {
            value: v.clone(),
            source: self.source.clone(),
            as_of: None,
        }))
    }
}

export_plugin!(grounders: [CsvGrounder]);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn answers_normalised_and_rereads_on_change() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("erp.csv");
        let text = "entity,attribute,value\n# export of today\nIC-MC-44 from S-208,lead time,35 days\nS-208,address,\"1 Quay St, Busan\"\n";
        std::fs::write(&p, text).unwrap();
        let s = Settings::new(serde_json::from_str(r#"{"source":"erp","path":"erp.csv"}"#).unwrap(), "t", d.path());
        let g = CsvGrounder::new(&s).unwrap();
        assert_eq!(g.lookup("ic-mc-44  from s-208", "Lead Time").unwrap().unwrap().value, "35 days");
        assert_eq!(g.lookup("S-208", "address").unwrap().unwrap().value, "1 Quay St, Busan");
        assert!(g.lookup("S-208", "price").unwrap().is_none());
        // the world changes: a later export
        std::fs::write(&p, text.replace("35 days", "42 days")).unwrap();
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(2_000_000_000);
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(t).unwrap();
        assert_eq!(g.lookup("IC-MC-44 from S-208", "lead time").unwrap().unwrap().value, "42 days");
    }

    #[test]
    fn malformed_rows_are_named_and_escapes_refused() {
        let e = parse(b"a,b,c\nbroken line\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let s = Settings::new(serde_json::from_str(r#"{"source":"erp","path":"../x.csv"}"#).unwrap(), "cfg", d.path());
        assert!(CsvGrounder::new(&s).err().unwrap().0.contains(".."));
    }
}
