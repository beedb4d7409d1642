//! The plugin registry: implementations register a factory by (role, kind name) with
//! `inventory`; config picks them by name. An unknown kind is an error listing the known ones.
//!
//! A binary must link every plugin crate (`use mnemo_store as _;`) so that the linker keeps
//! its registrations.
use serde::de::DeserializeOwned;
use std::fmt;
use std::path::{Component as PathComponent, Path, PathBuf};
use std::sync::Arc;

use crate::clock::Clock;
use crate::error::{CoreError, Result};
use crate::traits::{Assessor, Embedder, Grounder, Index, Reasoner, Store};

/// What a plugin implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// `Store`.
    Store,
    /// `Index`.
    Index,
    /// `Embedder`.
    Embedder,
    /// `Reasoner`.
    Reasoner,
    /// `Grounder`.
    Grounder,
    /// `Assessor`.
    Assessor,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 6] =
        [Role::Store, Role::Index, Role::Embedder, Role::Reasoner, Role::Grounder, Role::Assessor];
    /// Lower-case name (also the config section).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Store => "store",
            Role::Index => "index",
            Role::Embedder => "embedder",
            Role::Reasoner => "reasoner",
            Role::Grounder => "grounder",
            Role::Assessor => "assessor",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A built component.
#[derive(Clone)]
pub enum Component {
    /// A store.
    Store(Arc<dyn Store>),
    /// An index.
    Index(Arc<dyn Index>),
    /// An embedder.
    Embedder(Arc<dyn Embedder>),
    /// A reasoner.
    Reasoner(Arc<dyn Reasoner>),
    /// A grounder.
    Grounder(Arc<dyn Grounder>),
    /// An assessor.
    Assessor(Arc<dyn Assessor>),
}

/// What a factory gets: its settings section and what was built before it.
pub struct BuildContext<'a> {
    /// The section's settings, without `kind`.
    pub settings: &'a toml::Table,
    /// Where the section came from, for errors ("config/default.toml [store]").
    pub origin: &'a str,
    /// The data directory; relative paths in settings resolve inside it.
    pub data_dir: &'a Path,
    /// The directory of the config file that named this section (the current directory for
    /// the embedded default): paths to systems of record resolve against it.
    pub config_dir: &'a Path,
    /// The injected clock.
    pub clock: Arc<dyn Clock>,
    /// The store, once built (the index is built after it).
    pub store: Option<Arc<dyn Store>>,
    /// The embedder, once built.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// The grounders, once built (the assessor is built last).
    pub grounders: Vec<Arc<dyn Grounder>>,
}

impl BuildContext<'_> {
    /// Deserialize the settings into `T` (which should `deny_unknown_fields`); errors name the
    /// origin and the key.
    pub fn settings<T: DeserializeOwned>(&self) -> Result<T> {
        toml::Table::try_into::<T>(self.settings.clone())
            .map_err(|e| CoreError::Config(format!("{}: {}", self.origin, e.to_string().trim_end())))
    }
    /// A path given in the config file: absolute as written, relative to that file's directory.
    pub fn config_path(&self, path: &str) -> Result<PathBuf> {
        if path.trim().is_empty() {
            return Err(CoreError::Config(format!("{}: path must not be empty", self.origin)));
        }
        let p = Path::new(path);
        Ok(if p.is_absolute() { p.to_path_buf() } else { self.config_dir.join(p) })
    }
    /// Resolve a relative path inside the data directory; absolute paths and `..` are refused.
    pub fn data_path(&self, rel: &str) -> Result<PathBuf> {
        resolve_inside(self.data_dir, rel).map_err(|e| CoreError::Config(format!("{}: {e}", self.origin)))
    }
}

/// `base/rel`, refusing a `rel` that is absolute or climbs out with `..`.
pub fn resolve_inside(base: &Path, rel: &str) -> Result<PathBuf> {
    let p = Path::new(rel);
    if rel.is_empty()
        || p.is_absolute()
        || p.components().any(|c| !matches!(c, PathComponent::Normal(_) | PathComponent::CurDir))
    {
        return Err(CoreError::InvalidInput(format!(
            "path {rel:?} must be relative to the data directory and must not contain '..'"
        )));
    }
    Ok(base.join(p))
}

/// A registered factory.
pub struct Plugin {
    /// What it implements.
    pub role: Role,
    /// Its kind name in config.
    pub kind: &'static str,
    /// One line on what it is.
    pub about: &'static str,
    /// Build it.
    pub build: fn(&BuildContext<'_>) -> Result<Component>,
}

inventory::collect!(Plugin);

/// Every registered plugin.
pub fn plugins() -> impl Iterator<Item = &'static Plugin> {
    inventory::iter::<Plugin>.into_iter()
}

/// The registered kind names of a role, sorted.
pub fn kinds(role: Role) -> Vec<&'static str> {
    let mut v: Vec<_> = plugins().filter(|p| p.role == role).map(|p| p.kind).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Build the `kind` of `role`.
pub fn build(role: Role, kind: &str, ctx: &BuildContext<'_>) -> Result<Component> {
    match plugins().find(|p| p.role == role && p.kind == kind) {
        Some(p) => (p.build)(ctx),
        None => Err(CoreError::UnknownKind {
            origin: format!("{} kind", ctx.origin),
            role: role.to_string(),
            kind: kind.to_string(),
            known: {
                let k = kinds(role);
                if k.is_empty() {
                    "(none linked)".to_string()
                } else {
                    k.join(", ")
                }
            },
        }),
    }
}

/// Register a plugin: `mnemo_core::register_plugin!(Role::Store, "sqlite", "about", build_fn);`
#[macro_export]
macro_rules! register_plugin {
    ($role:expr, $kind:expr, $about:expr, $build:expr) => {
        $crate::registry::inventory::submit! {
            $crate::registry::Plugin { role: $role, kind: $kind, about: $about, build: $build }
        }
    };
}

#[doc(hidden)]
pub use inventory;

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn path_escapes_refused() {
        let b = Path::new("/data");
        assert!(resolve_inside(b, "../x").is_err());
        assert!(resolve_inside(b, "/etc/passwd").is_err());
        assert!(resolve_inside(b, "a/../../x").is_err());
        assert_eq!(resolve_inside(b, "a/b.db").unwrap(), Path::new("/data/a/b.db"));
    }
}
