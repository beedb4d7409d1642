//! Plugin libraries named in config (`[[plugins]] path = "…"`), loaded beside the kinds linked
//! into the binary.
use std::path::{Path, PathBuf};

use mnemo_contract::registry::{self, Role};
use mnemo_plugin_host::{PluginRole, PluginSet};

use crate::config::Config;
use crate::error::AgentError;

/// The `[[plugins]]` entries of one file, each path resolved against `base` (the directory of
/// the file naming it). Each entry takes exactly one key, `path`.
pub(crate) fn resolve_entries(value: &toml::Value, base: Option<&Path>) -> Result<Vec<PathBuf>, String> {
    let arr = value.as_array().ok_or("`plugins` must be an array of tables ([[plugins]] path = \"…\")")?;
    arr.iter()
        .enumerate()
        .map(|(i, entry)| {
            let t = entry.as_table().ok_or(format!("plugins[{i}] must be a table"))?;
            if let Some(k) = t.keys().find(|k| *k != "path") {
                return Err(format!("plugins[{i}]: unknown key `{k}`; a plugin entry takes only `path`"));
            }
            let path = t
                .get("path")
                .and_then(|p| p.as_str())
                .filter(|p| !p.trim().is_empty())
                .ok_or(format!("plugins[{i}].path must name a plugin library"))?;
            let path = Path::new(path);
            if path.is_absolute() {
                return Ok(path.to_path_buf());
            }
            let base = base.ok_or(format!(
                "plugins[{i}].path {path:?} is relative, but there is no config file for it to be relative to; use an absolute path"
            ))?;
            Ok(base.join(path))
        })
        .collect()
}

fn role_of(role: PluginRole) -> Role {
    match role {
        PluginRole::Grounder => Role::Grounder,
        PluginRole::Embedder => Role::Embedder,
        PluginRole::Assessor => Role::Assessor,
    }
}

/// Who already holds a kind among the kinds linked into this binary.
pub fn linked_holder(role: PluginRole, kind: &str) -> Option<String> {
    registry::kinds(role_of(role)).contains(&kind).then(|| "a kind linked into this binary".to_string())
}

/// Load the config's plugin libraries, refusing kinds already linked in or provided twice.
pub fn load(config: &Config) -> Result<PluginSet, AgentError> {
    Ok(PluginSet::load(&config.plugin_libraries(), &linked_holder)?)
}
