//! Write a Mnemo plugin: a `cdylib` crate with one trait impl and one line.
//!
//! ```ignore
//! use mnemo_plugin_sdk::{export_plugin, Grounded, GrounderPlugin, PluginError, Settings};
//!
//! pub struct Stock { /* … */ }
//!
//! impl GrounderPlugin for Stock {
//!     const KIND: &'static str = "stock";
//!     const ABOUT: &'static str = "stock on hand from the warehouse ledger";
//!     fn new(settings: &Settings) -> Result<Self, PluginError> { /* read settings */ }
//!     fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<Grounded>, PluginError> { /* … */ }
//! }
//!
//! export_plugin!(grounders: [Stock]);
//! ```
//!
//! The SDK owns the C boundary: it answers the host's handshake, decodes and encodes the JSON
//! messages, keeps the instances, and catches panics so that a bug in a plugin fails one call
//! instead of taking the host down. Calls are synchronous; the host runs them on a blocking
//! thread, so a plugin may block (files, SQLite) but must be `Send + Sync`.
#![deny(missing_docs)]

mod dispatch;
pub mod ffi;
mod settings;

pub use mnemo_plugin_abi as abi;
pub use mnemo_plugin_abi::{
    AssessItem, AssessRequest, AssessResponse, ClaimV1, CorrectionV1, GradeV1, Grounded, PluginRole,
};
pub use settings::Settings;

use std::fmt;

/// An error a plugin reports to the host (the message reaches the user as is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginError(pub String);

impl PluginError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        PluginError(message.into())
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PluginError {}

impl From<String> for PluginError {
    fn from(s: String) -> Self {
        PluginError(s)
    }
}

impl From<&str> for PluginError {
    fn from(s: &str) -> Self {
        PluginError(s.to_string())
    }
}

/// A READ-ONLY lookup in a system of record (config: `[[grounders]] kind = KIND`).
pub trait GrounderPlugin: Send + Sync + Sized + 'static {
    /// The kind name in config.
    const KIND: &'static str;
    /// One line on what it is (shown by `mnemo plugins`).
    const ABOUT: &'static str;
    /// Build from the config section (without `kind`). Fail here, at start-up, when the
    /// source is missing or malformed.
    fn new(settings: &Settings) -> Result<Self, PluginError>;
    /// The current value of `(entity, attribute)`, or `None` when this source does not hold it.
    fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<Grounded>, PluginError>;
}

/// Text to unit vectors (config: `[embedder] kind = KIND`).
pub trait EmbedderPlugin: Send + Sync + Sized + 'static {
    /// The kind name in config.
    const KIND: &'static str;
    /// One line on what it is.
    const ABOUT: &'static str;
    /// Build from the config section.
    fn new(settings: &Settings) -> Result<Self, PluginError>;
    /// The model id stored with every vector.
    fn model_id(&self) -> String;
    /// Vector dimensions.
    fn dims(&self) -> usize;
    /// One vector of `dims()` per text, in order.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, PluginError>;
}

/// Grades a recall pack and decides act or escalate (config: `[assessor] kind = KIND`).
pub trait AssessorPlugin: Send + Sync + Sized + 'static {
    /// The kind name in config.
    const KIND: &'static str;
    /// One line on what it is.
    const ABOUT: &'static str;
    /// Build from the config section.
    fn new(settings: &Settings) -> Result<Self, PluginError>;
    /// The verdict on a pack, with the write-backs wanted (`AssessResponse::corrections`:
    /// supersede a stale value with a system of record's, or confirm one). The plugin never
    /// writes memory itself; the host applies the corrections when
    /// `request.applies_corrections` says it does (an older host ignores them).
    fn assess(&self, request: &AssessRequest) -> Result<AssessResponse, PluginError>;
}

/// A grounder's lookup, type-erased.
pub type LookupFn = Box<dyn Fn(&str, &str) -> Result<Option<Grounded>, PluginError> + Send + Sync>;
/// An embedder's embed, type-erased.
pub type EmbedFn = Box<dyn Fn(&[String]) -> Result<Vec<Vec<f32>>, PluginError> + Send + Sync>;
/// An assessor's assess, type-erased.
pub type AssessFn = Box<dyn Fn(&AssessRequest) -> Result<AssessResponse, PluginError> + Send + Sync>;

/// A built instance, type-erased by role.
pub enum Instance {
    /// A grounder.
    Grounder(LookupFn),
    /// An embedder: (model id, dims, embed).
    Embedder(String, usize, EmbedFn),
    /// An assessor.
    Assessor(AssessFn),
}

/// One kind a library exports (built by `export_plugin!`).
pub struct Export {
    /// Its role.
    pub role: PluginRole,
    /// Its kind name.
    pub kind: &'static str,
    /// One line on what it is.
    pub about: &'static str,
    /// Build an instance.
    pub create: fn(&Settings) -> Result<Instance, PluginError>,
}

fn create_grounder<T: GrounderPlugin>(s: &Settings) -> Result<Instance, PluginError> {
    let g = T::new(s)?;
    Ok(Instance::Grounder(Box::new(move |e, a| g.lookup(e, a))))
}

fn create_embedder<T: EmbedderPlugin>(s: &Settings) -> Result<Instance, PluginError> {
    let e = T::new(s)?;
    let (model, dims) = (e.model_id(), e.dims());
    Ok(Instance::Embedder(model, dims, Box::new(move |texts| e.embed(texts))))
}

fn create_assessor<T: AssessorPlugin>(s: &Settings) -> Result<Instance, PluginError> {
    let a = T::new(s)?;
    Ok(Instance::Assessor(Box::new(move |r| a.assess(r))))
}

impl Export {
    /// The export of a grounder type.
    pub const fn grounder<T: GrounderPlugin>() -> Export {
        Export { role: PluginRole::Grounder, kind: T::KIND, about: T::ABOUT, create: create_grounder::<T> }
    }
    /// The export of an embedder type.
    pub const fn embedder<T: EmbedderPlugin>() -> Export {
        Export { role: PluginRole::Embedder, kind: T::KIND, about: T::ABOUT, create: create_embedder::<T> }
    }
    /// The export of an assessor type.
    pub const fn assessor<T: AssessorPlugin>() -> Export {
        Export { role: PluginRole::Assessor, kind: T::KIND, about: T::ABOUT, create: create_assessor::<T> }
    }
}

/// Everything a library exports (built by `export_plugin!`).
pub struct Exports {
    /// The plugin's name.
    pub name: &'static str,
    /// The plugin's version.
    pub version: &'static str,
    /// Its kinds.
    pub kinds: &'static [Export],
}

/// Export a plugin's kinds under the ABI entry symbol:
/// `export_plugin!(grounders: [A, B], embedders: [E], assessors: [S]);` (any of the three
/// groups, in that order). The plugin's name and version are its crate's.
#[macro_export]
macro_rules! export_plugin {
    ($($role:ident : [$($ty:ty),* $(,)?]),+ $(,)?) => {
        /// The Mnemo plugin ABI v1 entry point.
        // `no_mangle` is the one thing the ABI asks of a plugin crate; all unsafe code lives
        // in mnemo_plugin_sdk::ffi.
        #[allow(unsafe_code)]
        #[no_mangle]
        pub extern "C" fn mnemo_plugin_v1() -> *const $crate::abi::PluginV1 {
            static EXPORTS: $crate::Exports = $crate::Exports {
                name: env!("CARGO_PKG_NAME"),
                version: env!("CARGO_PKG_VERSION"),
                kinds: &[$($($crate::__export_one!($role, $ty)),*),+],
            };
            $crate::ffi::entry(&EXPORTS)
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_one {
    (grounders, $ty:ty) => {
        $crate::Export::grounder::<$ty>()
    };
    (embedders, $ty:ty) => {
        $crate::Export::embedder::<$ty>()
    };
    (assessors, $ty:ty) => {
        $crate::Export::assessor::<$ty>()
    };
}
