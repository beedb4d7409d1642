//! The host side of Mnemo's plugin ABI: load a shared library named in config
//! (`[[plugins]] path = "…"`), check its ABI version, read its manifest, and adapt the kinds it
//! provides (grounders, embedders, assessors) to the engine's traits.
//!
//! Guarantees: a library is never unloaded (its code and instances live as long as the
//! process); every plugin call runs on a blocking thread (`spawn_blocking`), never on the async
//! runtime; a plugin that panics, answers malformed JSON or reports an error fails that call
//! with an error naming the plugin; nothing a plugin does can crash the host except undefined
//! behaviour in the plugin's own code (the SDK catches panics before they cross the boundary).
#![deny(missing_docs)]

mod adapters;
mod error;
mod library;
mod set;

pub use adapters::{PluginAssessor, PluginEmbedder, PluginGrounder};
pub use error::HostError;
pub use library::{resolve_library_path, LoadedPlugin};
// The ABI's `PluginRole` is not re-exported: callers name roles by the contract's `Role`.
pub use mnemo_plugin_abi::{KindInfo, Manifest, ABI_VERSION};
pub use set::PluginSet;
