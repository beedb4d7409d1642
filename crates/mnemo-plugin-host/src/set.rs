//! The plugin libraries of one configuration and the kinds they provide.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mnemo_contract::registry::Role;
use mnemo_contract::{Assessor, Embedder, Grounder};
use mnemo_plugin_abi::PluginRole;

use crate::adapters::{create, PluginAssessor, PluginEmbedder, PluginGrounder};
use crate::error::HostError;
use crate::library::LoadedPlugin;

/// Loaded libraries and the `(role, kind)`s they provide (each provided once).
#[derive(Debug, Default)]
pub struct PluginSet {
    plugins: Vec<Arc<LoadedPlugin>>,
    kinds: BTreeMap<(&'static str, String), usize>,
}

impl PluginSet {
    /// Load every library in `paths`, refusing a kind that `taken` says is already registered
    /// (it answers who holds it, e.g. "built-in") or that an earlier library provides.
    pub fn load(paths: &[PathBuf], taken: &dyn Fn(Role, &str) -> Option<String>) -> Result<Self, HostError> {
        let mut set = PluginSet::default();
        for path in paths {
            let plugin = Arc::new(LoadedPlugin::load(path)?);
            for k in &plugin.manifest().kinds {
                let role = role(k.role);
                let key = (role.as_str(), k.kind.clone());
                let existing = taken(role, &k.kind)
                    .or_else(|| set.kinds.get(&key).map(|&i| format!("plugin {}", set.plugins[i].label())));
                if let Some(existing) = existing {
                    return Err(HostError::KindTaken {
                        role: k.role.as_str().to_string(),
                        kind: k.kind.clone(),
                        existing,
                        new: format!("plugin {}", plugin.label()),
                    });
                }
                set.kinds.insert(key, set.plugins.len());
            }
            set.plugins.push(plugin);
        }
        Ok(set)
    }

    /// The loaded libraries, in config order.
    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }

    /// The library providing `kind` of `role`, if one does.
    pub fn provider(&self, role: Role, kind: &str) -> Option<&Arc<LoadedPlugin>> {
        self.kinds.get(&(role.as_str(), kind.to_string())).and_then(|&i| self.plugins.get(i))
    }

    /// Build the plugin grounder `kind`, or `None` when no library provides it.
    pub async fn grounder(
        &self,
        kind: &str,
        settings: &toml::Table,
        origin: &str,
        data_dir: &Path,
    ) -> Result<Option<Arc<dyn Grounder>>, HostError> {
        let Some(p) = self.provider(Role::Grounder, kind) else { return Ok(None) };
        let instance = create(p, PluginRole::Grounder, kind, settings, origin, data_dir).await?;
        let source = settings.get("source").and_then(|s| s.as_str()).unwrap_or(kind).to_string();
        Ok(Some(Arc::new(PluginGrounder::new(p.clone(), instance, source))))
    }

    /// Build the plugin embedder `kind`, or `None` when no library provides it.
    pub async fn embedder(
        &self,
        kind: &str,
        settings: &toml::Table,
        origin: &str,
        data_dir: &Path,
    ) -> Result<Option<Arc<dyn Embedder>>, HostError> {
        let Some(p) = self.provider(Role::Embedder, kind) else { return Ok(None) };
        let instance = create(p, PluginRole::Embedder, kind, settings, origin, data_dir).await?;
        Ok(Some(Arc::new(PluginEmbedder::new(p.clone(), instance).await?)))
    }

    /// Build the plugin assessor `kind`, or `None` when no library provides it.
    pub async fn assessor(
        &self,
        kind: &str,
        settings: &toml::Table,
        origin: &str,
        data_dir: &Path,
    ) -> Result<Option<Arc<dyn Assessor>>, HostError> {
        let Some(p) = self.provider(Role::Assessor, kind) else { return Ok(None) };
        let instance = create(p, PluginRole::Assessor, kind, settings, origin, data_dir).await?;
        Ok(Some(Arc::new(PluginAssessor::new(p.clone(), instance))))
    }
}

/// The engine's role of a role named on the wire: the one place the ABI's `PluginRole` (kept
/// in the dependency-light ABI crate a plugin links) meets the contract's `Role`, which is all
/// the host's callers see.
pub(crate) fn role(r: PluginRole) -> Role {
    match r {
        PluginRole::Grounder => Role::Grounder,
        PluginRole::Embedder => Role::Embedder,
        PluginRole::Assessor => Role::Assessor,
    }
}
