//! The index a retrieval bench builds (`bench locomo`, `bench longmemeval`, `bench
//! answerability`): the configured `[index]` section as the runtime would build it — same kind,
//! every key, through the registry's typed factory — with only its on-disk keys replaced, so
//! the bench keeps it in RAM. A key the bench does not know is thus measured all the same, and
//! a key the factory refuses fails with the factory's own error, naming the origin.
use std::path::Path;
use std::sync::Arc;

use mnemo_contract::fusion::FusionSettings;
use mnemo_contract::registry::{self, IndexContext, Section};
use mnemo_contract::{Clock, Embedder, Index};
use mnemo_store::tantivy_index::TantivySettings;

use crate::error::{BenchError, Result};

/// The index kind a bench builds when nothing is configured (the default config's).
pub const DEFAULT_KIND: &str = "tantivy";

/// A configured `[index]` section, as `Config::plugin("index")` gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfiguredIndex {
    /// Its kind.
    pub kind: String,
    /// Its settings, without `kind`.
    pub settings: toml::Table,
    /// Where it came from (the config file), for errors.
    pub origin: String,
}

impl Default for ConfiguredIndex {
    /// No configuration: the default kind with its factory's defaults.
    fn default() -> Self {
        ConfiguredIndex { kind: DEFAULT_KIND.into(), settings: toml::Table::new(), origin: "bench defaults".into() }
    }
}

/// An index section ready for the factory: a kind the bench can keep in RAM, with settings
/// that say so.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchIndex {
    kind: String,
    settings: toml::Table,
    origin: String,
}

/// The typed settings of a bench index, read as its factory reads them.
enum Typed {
    Tantivy(TantivySettings),
    Brute(FusionSettings),
}

impl BenchIndex {
    /// `settings` of `kind` with the on-disk keys replaced: tantivy gets `in_memory = true` and
    /// loses `path` and `read_only` (a read-only data directory is no concern of a RAM index,
    /// which the bench must fill); brute never persists. Other kinds live outside the process
    /// (or are not built in) and are refused.
    pub fn in_ram(kind: &str, mut settings: toml::Table, origin: &str) -> Result<Self> {
        match kind {
            "tantivy" => {
                settings.insert("in_memory".into(), true.into());
                settings.remove("path");
                settings.remove("read_only");
            }
            "brute" => {}
            other => {
                return Err(BenchError::Arg(format!(
                    "{origin}: [index] kind {other:?}: the bench keeps its index in RAM and supports tantivy or brute"
                )))
            }
        }
        Ok(BenchIndex { kind: kind.into(), settings, origin: origin.into() })
    }

    /// The kind.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The settings given to the factory.
    pub fn settings(&self) -> &toml::Table {
        &self.settings
    }

    /// The section the factory gets (nothing in RAM resolves a path, so the directories are
    /// placeholders).
    fn section(&self) -> Section<'_> {
        Section { settings: &self.settings, origin: &self.origin, data_dir: Path::new("."), config_dir: Path::new(".") }
    }

    /// Build it through the registry's factory, which validates every key (its errors name the
    /// origin).
    pub fn build(&self, clock: Arc<dyn Clock>, embedder: Arc<dyn Embedder>) -> Result<Arc<dyn Index>> {
        Ok(registry::build_index(&self.kind, &IndexContext { section: self.section(), clock, embedder })?)
    }

    /// The settings as the factory reads them (its errors, naming the origin).
    fn typed(&self) -> Result<Typed> {
        let s = self.section();
        Ok(match self.kind.as_str() {
            "tantivy" => Typed::Tantivy(s.settings()?),
            _ => Typed::Brute(s.settings()?),
        })
    }

    /// The entity boost the index ranks with (0: off; brute has none).
    pub fn entity_boost(&self) -> Result<f32> {
        Ok(match self.typed()? {
            Typed::Tantivy(t) => t.entity_boost,
            Typed::Brute(_) => 0.0,
        })
    }

    /// One line for a report: the kind and the settings that change a ranking.
    pub fn describe(&self) -> Result<String> {
        Ok(match self.typed()? {
            Typed::Tantivy(t) => format!(
                "tantivy in RAM ({:?} fusion, lexical {} dense {} k {} stemming {} entity boost {} query stop words {})",
                t.fusion, t.lexical_weight, t.dense_weight, t.rrf_k, t.stemming, t.entity_boost, t.query_stop_words
            ),
            Typed::Brute(f) => format!("brute (lexical {} dense {} k {})", f.lexical_weight, f.dense_weight, f.rrf_k),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn on_disk_keys_are_replaced_and_the_rest_kept() {
        let t: toml::Table = toml::from_str("path = \"index\"\nread_only = true\nstemming = false").unwrap();
        let b = BenchIndex::in_ram("tantivy", t, "cfg.toml").unwrap();
        assert_eq!(b.settings().get("in_memory"), Some(&toml::Value::Boolean(true)));
        assert!(b.settings().get("path").is_none() && b.settings().get("read_only").is_none());
        assert_eq!(b.settings().get("stemming"), Some(&toml::Value::Boolean(false)));
        let e = BenchIndex::in_ram("pgvector", toml::Table::new(), "cfg.toml").unwrap_err();
        assert!(e.to_string().contains("cfg.toml") && e.to_string().contains("pgvector"), "{e}");
    }

    #[test]
    fn the_description_reads_the_typed_settings() {
        let t: toml::Table = toml::from_str("entity_boost = 1\nfusion = \"convex\"").unwrap();
        let b = BenchIndex::in_ram("tantivy", t, "c").unwrap();
        assert_eq!(b.entity_boost().unwrap(), 1.0, "an integer is a boost too");
        assert!(b.describe().unwrap().contains("Convex fusion"), "{}", b.describe().unwrap());
        let b = BenchIndex::in_ram("brute", toml::Table::new(), "c").unwrap();
        assert_eq!(b.entity_boost().unwrap(), 0.0);
        assert_eq!(b.describe().unwrap(), "brute (lexical 1 dense 0.1 k 30)");
    }
}
