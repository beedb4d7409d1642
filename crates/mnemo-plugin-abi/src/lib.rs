//! The C ABI between the Mnemo host and a dynamically loaded plugin (a `cdylib`).
//!
//! A plugin library exports one symbol, [`ENTRY_SYMBOL`] (`mnemo_plugin_v1`), an
//! `extern "C" fn() -> *const PluginV1`. The table it returns starts with the ABI version and
//! the size of the table as the plugin was compiled; the host refuses any other version or a
//! table smaller than its own (naming both). Everything else crosses as UTF-8 JSON in buffers
//! the plugin allocates and the host hands back to the plugin's `free_buffer`.
//!
//! Versioning rules: a change to [`PluginV1`]'s layout or to the meaning of an existing message
//! is a new ABI version with a new entry symbol (`mnemo_plugin_v2`); fields may be appended to
//! a JSON message (readers ignore unknown fields and default missing optional ones) without a
//! new version. The host looks for the other entry symbols only to say which version a
//! library was built for.
#![deny(missing_docs)]

mod messages;

pub use messages::*;

/// The ABI version this crate describes.
pub const ABI_VERSION: u32 = 1;

/// The exported entry point of ABI version 1.
pub const ENTRY_SYMBOL: &str = "mnemo_plugin_v1";

/// The entry symbol of ABI version `v` (`mnemo_plugin_v{v}`).
pub fn entry_symbol(v: u32) -> String {
    format!("mnemo_plugin_v{v}")
}

/// A byte buffer allocated by the plugin. The host reads `len` bytes at `ptr` and then gives
/// the buffer back, unchanged, to the same plugin's `free_buffer` exactly once.
#[repr(C)]
#[derive(Debug)]
pub struct OwnedBuffer {
    /// Start of the bytes (dangling but non-null when `len` is 0).
    pub ptr: *mut u8,
    /// Number of initialised bytes.
    pub len: usize,
    /// Allocation capacity (the plugin's business; the host passes it back untouched).
    pub cap: usize,
}

/// The entry table of ABI version 1. Append-only within a version is NOT allowed: any change is
/// a new version (see the crate docs).
#[repr(C)]
pub struct PluginV1 {
    /// Must equal [`ABI_VERSION`] (1).
    pub abi_version: u32,
    /// `size_of::<PluginV1>()` as the plugin was compiled.
    pub struct_size: u32,
    /// The manifest as JSON ([`Manifest`]). Never fails.
    pub manifest: extern "C" fn() -> OwnedBuffer,
    /// Handle one JSON [`Request`] (`ptr`/`len`: UTF-8 bytes owned by the host, valid for the
    /// call); returns a JSON [`Response`]. Never unwinds: a panic becomes a `Response::Error`.
    pub call: extern "C" fn(ptr: *const u8, len: usize) -> OwnedBuffer,
    /// Free a buffer this plugin returned.
    pub free_buffer: extern "C" fn(buffer: OwnedBuffer),
}

/// The type of the entry symbol.
pub type EntryV1 = extern "C" fn() -> *const PluginV1;

/// `size_of::<PluginV1>()` as a `u32` (the table is a handful of words).
pub const PLUGIN_V1_SIZE: u32 = std::mem::size_of::<PluginV1>() as u32;
