//! Plugin libraries named in config (`[[plugins]] path = "…"`), loaded beside the kinds linked
//! into the binary.
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mnemo_contract::registry::inventory::Collect;
use mnemo_contract::registry::{
    self, AssessorFactory, EmbedderFactory, Factory, GrounderFactory, IndexFactory, ReasonerFactory, Role, Section,
    StoreFactory,
};
use mnemo_plugin_host::{HostError, LoadedPlugin, PluginSet};

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

/// Who already holds a kind among the kinds linked into this binary.
pub fn linked_holder(role: Role, kind: &str) -> Option<String> {
    registry::kinds(role).contains(&kind).then(|| "a kind linked into this binary".to_string())
}

/// Load the config's plugin libraries, refusing kinds already linked in or provided twice.
pub fn load(config: &Config) -> Result<Kinds, AgentError> {
    Ok(Kinds { plugins: PluginSet::load(&config.plugin_libraries(), &linked_holder)? })
}

/// Every kind one configuration can build: those of its `[[plugins]]` libraries and those
/// linked into the binary (never both: loading refuses a library kind already linked in). The
/// one way a component is built, whatever its role or origin: [`Kinds::build`].
#[derive(Debug)]
pub struct Kinds {
    plugins: PluginSet,
}

impl Kinds {
    /// The loaded libraries, in config order.
    pub fn libraries(&self) -> &[Arc<LoadedPlugin>] {
        self.plugins.plugins()
    }

    /// Build `kind` of role `F` (`StoreFactory`, `EmbedderFactory`, …) from `ctx`: by the
    /// library that provides it, else by the factory linked in under it (an unknown kind is
    /// an error listing the linked ones). A linked factory runs off the executor: opening a
    /// store, an index or a model reads files.
    pub async fn build<F: Component>(&self, kind: &str, ctx: &F::Context<'_>) -> Result<Arc<F::Built>, AgentError> {
        let section = F::section(ctx);
        if let Some(built) = F::from_plugin(&self.plugins, kind, section).await? {
            return Ok(built);
        }
        Ok(crate::blocking::blocking(|| registry::build::<F>(kind, ctx, section.origin))?)
    }
}

/// A role as [`Kinds::build`] builds it: its registry factory, and how a plugin library
/// provides it (for the roles the plugin ABI has; the others are only ever linked in).
pub trait Component: Factory + Collect {
    /// The config section in a context of this role.
    fn section<'c, 'a>(ctx: &'c Self::Context<'a>) -> &'c Section<'a>;
    /// The component built by the library of `plugins` providing `kind`; None when none does.
    fn from_plugin<'f>(
        plugins: &'f PluginSet,
        kind: &'f str,
        section: &'f Section<'_>,
    ) -> impl Future<Output = Result<Option<Arc<Self::Built>>, HostError>> + Send + 'f;
}

/// A role no plugin library can provide: linked in only.
macro_rules! linked_only {
    ($($factory:ty),*) => {$(
        impl Component for $factory {
            fn section<'c, 'a>(ctx: &'c Self::Context<'a>) -> &'c Section<'a> {
                &ctx.section
            }
            fn from_plugin<'f>(
                _: &'f PluginSet,
                _: &'f str,
                _: &'f Section<'_>,
            ) -> impl Future<Output = Result<Option<Arc<Self::Built>>, HostError>> + Send + 'f {
                std::future::ready(Ok(None))
            }
        }
    )*};
}
linked_only!(StoreFactory, IndexFactory, ReasonerFactory);

/// A role the plugin ABI has: built by `PluginSet::$method` when a library provides the kind.
macro_rules! pluggable {
    ($($factory:ty => $method:ident),*) => {$(
        impl Component for $factory {
            fn section<'c, 'a>(ctx: &'c Self::Context<'a>) -> &'c Section<'a> {
                &ctx.section
            }
            fn from_plugin<'f>(
                plugins: &'f PluginSet,
                kind: &'f str,
                section: &'f Section<'_>,
            ) -> impl Future<Output = Result<Option<Arc<Self::Built>>, HostError>> + Send + 'f {
                plugins.$method(kind, section.settings, section.origin, section.data_dir)
            }
        }
    )*};
}
pluggable!(EmbedderFactory => embedder, GrounderFactory => grounder, AssessorFactory => assessor);
