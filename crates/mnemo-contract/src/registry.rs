//! The registry of kinds linked into a binary: one typed factory per role. Implementations
//! register a factory by kind name with `inventory` (`register_store!`, `register_index!`,
//! `register_embedder!`, `register_reasoner!`, `register_grounder!`, `register_assessor!`);
//! config picks them by name. An unknown kind is an error listing the known ones.
//!
//! Each role's factory gets a typed context: its config section (settings, origin, data
//! directory) and exactly the dependencies that role is built from (an index gets the clock
//! and the embedder; an assessor gets the grounders), never optional fields.
//!
//! A binary must link every crate whose kinds it offers (`use mnemo_store as _;`) so that the
//! linker keeps its registrations. Kinds from plugin libraries loaded at run time are not in
//! here: the host (mnemo-plugin-host) builds those.
use serde::de::DeserializeOwned;
use std::fmt;
use std::ops::Deref;
use std::path::{Component as PathComponent, Path, PathBuf};
use std::sync::Arc;

use crate::clock::Clock;
use crate::error::{CoreError, Result};
use crate::{Assessor, Embedder, Grounder, Index, Reasoner, Store};

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

/// One config section: its settings, where it came from, and the data directory.
#[derive(Clone, Copy)]
pub struct Section<'a> {
    /// The section's settings, without `kind`.
    pub settings: &'a toml::Table,
    /// Where the section came from, for errors ("config/default.toml [store]").
    pub origin: &'a str,
    /// The data directory; relative paths in settings resolve inside it.
    pub data_dir: &'a Path,
    /// The directory of the config file that named this section (the current directory for
    /// the embedded default): paths to systems of record resolve against it.
    pub config_dir: &'a Path,
}

impl Section<'_> {
    /// Deserialize the settings into `T` (which should `deny_unknown_fields`); errors name the
    /// origin and the key.
    pub fn settings<T: DeserializeOwned>(&self) -> Result<T> {
        toml::Table::try_into::<T>(self.settings.clone())
            .map_err(|e| CoreError::Config(format!("{}: {}", self.origin, crate::text::toml_error(&e, None))))
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

/// What a store factory gets.
pub struct StoreContext<'a> {
    /// Its config section.
    pub section: Section<'a>,
    /// The injected clock.
    pub clock: Arc<dyn Clock>,
}

/// What an embedder factory gets.
pub struct EmbedderContext<'a> {
    /// Its config section.
    pub section: Section<'a>,
    /// The shared `[llm]` section (see [`ReasonerContext::llm`]).
    pub llm: Option<&'a toml::Table>,
}

/// What an index factory gets (built after the embedder).
pub struct IndexContext<'a> {
    /// Its config section.
    pub section: Section<'a>,
    /// The injected clock.
    pub clock: Arc<dyn Clock>,
    /// The embedder whose vectors it will hold.
    pub embedder: Arc<dyn Embedder>,
}

/// What a reasoner factory gets.
pub struct ReasonerContext<'a> {
    /// Its config section.
    pub section: Section<'a>,
    /// The shared `[llm]` section, the model seam: configured once for every component that
    /// calls a model, given beside the component's own section and never merged into it (so a
    /// component's settings hold only its own keys). The seam's typed settings (mnemo-llm's
    /// `LlmSettings`, which refuses unknown keys) read it; other kinds ignore it. None: the
    /// caller has no configuration to give (a component of kind "llm" then refuses to build:
    /// the model client is never implied).
    pub llm: Option<&'a toml::Table>,
}

/// What a grounder factory gets.
pub struct GrounderContext<'a> {
    /// Its config section.
    pub section: Section<'a>,
    /// The injected clock.
    pub clock: Arc<dyn Clock>,
}

/// What an assessor factory gets (built last).
pub struct AssessorContext<'a> {
    /// Its config section.
    pub section: Section<'a>,
    /// Every grounder, in config order (then any extra ones).
    pub grounders: Vec<Arc<dyn Grounder>>,
}

macro_rules! deref_section {
    ($($ctx:ident),*) => {$(
        impl<'a> Deref for $ctx<'a> {
            type Target = Section<'a>;
            fn deref(&self) -> &Section<'a> {
                &self.section
            }
        }
    )*};
}
deref_section!(StoreContext, EmbedderContext, IndexContext, ReasonerContext, GrounderContext, AssessorContext);

/// A typed factory of one role: `kind`, a line on what it is, and how to build it.
pub trait Factory: Sync + 'static {
    /// The role.
    const ROLE: Role;
    /// What it gets.
    type Context<'a>;
    /// What it builds.
    type Built: ?Sized;
    /// Its kind name in config.
    fn kind(&self) -> &'static str;
    /// One line on what it is.
    fn about(&self) -> &'static str;
    /// Build it.
    fn build(&self, ctx: &Self::Context<'_>) -> Result<Arc<Self::Built>>;
}

macro_rules! factory {
    ($(#[$doc:meta])* $name:ident, $role:ident, $ctx:ident, $tr:ident) => {
        $(#[$doc])*
        pub struct $name {
            /// Its kind name in config.
            pub kind: &'static str,
            /// One line on what it is.
            pub about: &'static str,
            /// Build it.
            pub build: fn(&$ctx<'_>) -> Result<Arc<dyn $tr>>,
        }
        inventory::collect!($name);
        impl Factory for $name {
            const ROLE: Role = Role::$role;
            type Context<'a> = $ctx<'a>;
            type Built = dyn $tr;
            fn kind(&self) -> &'static str {
                self.kind
            }
            fn about(&self) -> &'static str {
                self.about
            }
            fn build(&self, ctx: &$ctx<'_>) -> Result<Arc<dyn $tr>> {
                (self.build)(ctx)
            }
        }
    };
}

factory!(/// Builds a `Store`.
    StoreFactory, Store, StoreContext, Store);
factory!(/// Builds an `Index`.
    IndexFactory, Index, IndexContext, Index);
factory!(/// Builds an `Embedder`.
    EmbedderFactory, Embedder, EmbedderContext, Embedder);
factory!(/// Builds a `Reasoner`.
    ReasonerFactory, Reasoner, ReasonerContext, Reasoner);
factory!(/// Builds a `Grounder`.
    GrounderFactory, Grounder, GrounderContext, Grounder);
factory!(/// Builds an `Assessor`.
    AssessorFactory, Assessor, AssessorContext, Assessor);

fn registered<F: Factory + inventory::Collect>() -> impl Iterator<Item = &'static F> {
    inventory::iter::<F>.into_iter()
}

/// One registered kind, for listings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registered {
    /// Its role.
    pub role: Role,
    /// Its kind name.
    pub kind: &'static str,
    /// One line on what it is.
    pub about: &'static str,
}

fn listed<F: Factory + inventory::Collect>() -> Vec<Registered> {
    let mut v: Vec<_> =
        registered::<F>().map(|f| Registered { role: F::ROLE, kind: f.kind(), about: f.about() }).collect();
    v.sort_by_key(|r| r.kind);
    v.dedup_by_key(|r| r.kind);
    v
}

/// Every registered kind, by role then kind.
pub fn all() -> Vec<Registered> {
    let mut v = listed::<StoreFactory>();
    v.extend(listed::<IndexFactory>());
    v.extend(listed::<EmbedderFactory>());
    v.extend(listed::<ReasonerFactory>());
    v.extend(listed::<GrounderFactory>());
    v.extend(listed::<AssessorFactory>());
    v
}

/// The registered kind names of a role, sorted.
pub fn kinds(role: Role) -> Vec<&'static str> {
    all().into_iter().filter(|r| r.role == role).map(|r| r.kind).collect()
}

/// Build `kind` with the factory of role `F` registered under it.
pub fn build<F: Factory + inventory::Collect>(kind: &str, ctx: &F::Context<'_>, origin: &str) -> Result<Arc<F::Built>> {
    match registered::<F>().find(|f| f.kind() == kind) {
        Some(f) => f.build(ctx).map_err(|e| naming_origin(e, origin)),
        None => Err(CoreError::UnknownKind {
            origin: format!("{origin} kind"),
            role: F::ROLE.to_string(),
            kind: kind.to_string(),
            known: {
                let k = kinds(F::ROLE);
                if k.is_empty() {
                    "(none linked)".to_string()
                } else {
                    k.join(", ")
                }
            },
        }),
    }
}

/// A factory's config error, naming where the section came from. `Section::settings` names
/// it already; a factory's own checks (a value out of range: "index.dense_weight must be …")
/// do not, and the user must know which file to fix.
fn naming_origin(e: CoreError, origin: &str) -> CoreError {
    match e {
        CoreError::Config(m) if !m.starts_with(origin) => CoreError::Config(format!("{origin}: {m}")),
        e => e,
    }
}

/// Build the store `kind`.
pub fn build_store(kind: &str, ctx: &StoreContext<'_>) -> Result<Arc<dyn Store>> {
    build::<StoreFactory>(kind, ctx, ctx.origin)
}
/// Build the index `kind`.
pub fn build_index(kind: &str, ctx: &IndexContext<'_>) -> Result<Arc<dyn Index>> {
    build::<IndexFactory>(kind, ctx, ctx.origin)
}
/// Build the embedder `kind`.
pub fn build_embedder(kind: &str, ctx: &EmbedderContext<'_>) -> Result<Arc<dyn Embedder>> {
    build::<EmbedderFactory>(kind, ctx, ctx.origin)
}
/// Build the reasoner `kind`.
pub fn build_reasoner(kind: &str, ctx: &ReasonerContext<'_>) -> Result<Arc<dyn Reasoner>> {
    build::<ReasonerFactory>(kind, ctx, ctx.origin)
}
/// Build the grounder `kind`.
pub fn build_grounder(kind: &str, ctx: &GrounderContext<'_>) -> Result<Arc<dyn Grounder>> {
    build::<GrounderFactory>(kind, ctx, ctx.origin)
}
/// Build the assessor `kind`.
pub fn build_assessor(kind: &str, ctx: &AssessorContext<'_>) -> Result<Arc<dyn Assessor>> {
    build::<AssessorFactory>(kind, ctx, ctx.origin)
}

/// Register a store kind: `mnemo_contract::register_store!("sqlite", "one line on it", build)` with
/// `fn build(&StoreContext<'_>) -> Result<Arc<dyn Store>>`.
#[macro_export]
macro_rules! register_store {
    ($kind:expr, $about:expr, $build:expr) => {
        $crate::registry::inventory::submit! {
            $crate::registry::StoreFactory { kind: $kind, about: $about, build: $build }
        }
    };
}

/// Register a index kind: `mnemo_contract::register_index!("tantivy", "one line on it", build)` with
/// `fn build(&IndexContext<'_>) -> Result<Arc<dyn Index>>`.
#[macro_export]
macro_rules! register_index {
    ($kind:expr, $about:expr, $build:expr) => {
        $crate::registry::inventory::submit! {
            $crate::registry::IndexFactory { kind: $kind, about: $about, build: $build }
        }
    };
}

/// Register a embedder kind: `mnemo_contract::register_embedder!("fake", "one line on it", build)` with
/// `fn build(&EmbedderContext<'_>) -> Result<Arc<dyn Embedder>>`.
#[macro_export]
macro_rules! register_embedder {
    ($kind:expr, $about:expr, $build:expr) => {
        $crate::registry::inventory::submit! {
            $crate::registry::EmbedderFactory { kind: $kind, about: $about, build: $build }
        }
    };
}

/// Register a reasoner kind: `mnemo_contract::register_reasoner!("llm", "one line on it", build)` with
/// `fn build(&ReasonerContext<'_>) -> Result<Arc<dyn Reasoner>>`.
#[macro_export]
macro_rules! register_reasoner {
    ($kind:expr, $about:expr, $build:expr) => {
        $crate::registry::inventory::submit! {
            $crate::registry::ReasonerFactory { kind: $kind, about: $about, build: $build }
        }
    };
}

/// Register a grounder kind: `mnemo_contract::register_grounder!("table", "one line on it", build)` with
/// `fn build(&GrounderContext<'_>) -> Result<Arc<dyn Grounder>>`.
#[macro_export]
macro_rules! register_grounder {
    ($kind:expr, $about:expr, $build:expr) => {
        $crate::registry::inventory::submit! {
            $crate::registry::GrounderFactory { kind: $kind, about: $about, build: $build }
        }
    };
}

/// Register a assessor kind: `mnemo_contract::register_assessor!("grounding", "one line on it", build)` with
/// `fn build(&AssessorContext<'_>) -> Result<Arc<dyn Assessor>>`.
#[macro_export]
macro_rules! register_assessor {
    ($kind:expr, $about:expr, $build:expr) => {
        $crate::registry::inventory::submit! {
            $crate::registry::AssessorFactory { kind: $kind, about: $about, build: $build }
        }
    };
}

#[doc(hidden)]
pub use inventory;

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_factory_config_error_names_the_section_once() {
        let named = naming_origin(CoreError::Config("index.dense_weight must be ≥ 0".into()), "c.toml [index]");
        assert_eq!(named.to_string().matches("c.toml [index]: index.dense_weight").count(), 1, "{named}");
        let already = naming_origin(CoreError::Config("c.toml [index]: unknown field `x`".into()), "c.toml [index]");
        assert_eq!(already.to_string().matches("c.toml [index]").count(), 1, "{already}");
        let other = naming_origin(CoreError::InvalidInput("no".into()), "c.toml [index]");
        assert!(!other.to_string().contains("c.toml"), "{other}");
    }
    #[test]
    fn path_escapes_refused() {
        let b = Path::new("/data");
        assert!(resolve_inside(b, "../x").is_err());
        assert!(resolve_inside(b, "/etc/passwd").is_err());
        assert!(resolve_inside(b, "a/../../x").is_err());
        assert_eq!(resolve_inside(b, "a/b.db").unwrap(), Path::new("/data/a/b.db"));
    }
}
