//! A kind's config section as the plugin sees it.
use serde::de::DeserializeOwned;
use std::path::{Component, Path, PathBuf};

use crate::PluginError;

/// The config section of one instance (without `kind`), where it came from, and the data
/// directory.
#[derive(Clone, Debug)]
pub struct Settings {
    values: serde_json::Map<String, serde_json::Value>,
    origin: String,
    data_dir: PathBuf,
}

impl Settings {
    /// Settings from their parts (the SDK builds them from the host's request; tests build
    /// them by hand).
    pub fn new(values: serde_json::Map<String, serde_json::Value>, origin: &str, data_dir: &Path) -> Self {
        Settings { values, origin: origin.to_string(), data_dir: data_dir.to_path_buf() }
    }

    /// Deserialize into `T` (use `#[serde(deny_unknown_fields)]`); errors name the origin.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, PluginError> {
        serde_json::from_value(serde_json::Value::Object(self.values.clone()))
            .map_err(|e| PluginError(format!("{}: {e}", self.origin)))
    }

    /// Where the section came from ("mnemo.toml [grounders[0]]"), for error messages.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// `rel` inside the data directory; absolute paths and `..` are refused (a plugin reads
    /// what the operator put there, nothing else).
    pub fn data_path(&self, rel: &str) -> Result<PathBuf, PluginError> {
        let p = Path::new(rel);
        if rel.is_empty()
            || p.is_absolute()
            || p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(PluginError(format!(
                "{}: path {rel:?} must be relative to the data directory and must not contain '..'",
                self.origin
            )));
        }
        Ok(self.data_dir.join(p))
    }
}
