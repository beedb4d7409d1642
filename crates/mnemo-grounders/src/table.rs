//! A table-backed grounder: `(entity, attribute) → value` rows held in memory. Scenario `world`
//! events feed one per source; config can give rows inline (`[[grounders]] kind = "table"`).
use async_trait::async_trait;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use mnemo_contract::registry::GrounderContext;
use mnemo_contract::text::{norm_name, norm_value};
use mnemo_contract::{CoreError, GroundedValue, Grounder, GrounderErrorKind, Result, Timestamp};

/// `(entity, attribute)` normalised → (value, as of).
type Rows = HashMap<(String, String), (String, Option<Timestamp>)>;

/// An in-memory system of record. Cloning shares the table (the harness updates it as the
/// simulated world changes; the grounder only reads it).
#[derive(Clone, Debug)]
pub struct TableGrounder {
    source: String,
    rows: Arc<RwLock<Rows>>,
}

impl TableGrounder {
    /// An empty table named `source`.
    pub fn new(source: &str) -> Self {
        TableGrounder { source: source.to_string(), rows: Arc::default() }
    }
    /// Set the current value of `(entity, attribute)` (the world changed).
    pub fn set(&self, entity: &str, attribute: &str, value: &str) {
        self.set_at(entity, attribute, value, None);
    }
    /// Set the value with the time the source says it changed.
    pub fn set_at(&self, entity: &str, attribute: &str, value: &str, as_of: Option<Timestamp>) {
        if let Ok(mut rows) = self.rows.write() {
            rows.insert((norm_name(entity), norm_name(attribute)), (norm_value(value), as_of));
        }
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.read().map(|r| r.len()).unwrap_or(0)
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl Grounder for TableGrounder {
    fn source(&self) -> &str {
        &self.source
    }
    async fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<GroundedValue>> {
        let rows = self.rows.read().map_err(|_| {
            CoreError::grounder_message(GrounderErrorKind::Other, format!("table {} is poisoned", self.source))
        })?;
        Ok(rows.get(&(norm_name(entity), norm_name(attribute))).map(|(v, at)| GroundedValue {
            value: v.clone(),
            source: self.source.clone(),
            as_of: *at,
        }))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableSettings {
    source: String,
    #[serde(default)]
    rows: Vec<[String; 3]>,
}

fn build(ctx: &GrounderContext<'_>) -> Result<Arc<dyn Grounder>> {
    let s: TableSettings = ctx.settings()?;
    if s.source.trim().is_empty() {
        return Err(CoreError::Config(format!("{}: source must not be empty", ctx.origin)));
    }
    let g = TableGrounder::new(s.source.trim());
    for [e, a, v] in &s.rows {
        g.set(e, a, v);
    }
    Ok(Arc::new(g))
}

mnemo_contract::register_grounder!("table", "in-memory table of (entity, attribute, value) rows", build);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lookup_is_normalised_and_shared() {
        let g = TableGrounder::new("erp");
        let reader = g.clone();
        g.set("IC-MC-44 from S-208", "Lead  Time", "35 days");
        let v = reader.lookup("ic-mc-44 from s-208", "lead time").await.unwrap().unwrap();
        assert_eq!(v.value, "35 days");
        assert_eq!(v.source, "erp");
        assert!(reader.lookup("IC-MC-44 from S-208", "price").await.unwrap().is_none());
    }
}
