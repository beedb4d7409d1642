//! Loading a plugin library and calling its entry table. Every `unsafe` block of the host is
//! in this module.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};

use libloading::Library;
use mnemo_plugin_abi::{entry_symbol, EntryV1, Manifest, PluginV1, Request, Response, ABI_VERSION, PLUGIN_V1_SIZE};
use serde::de::DeserializeOwned;

use crate::error::HostError;

/// Other ABI versions a library might be built for; looked for only to name the version in
/// the refusal.
const OTHER_VERSIONS: std::ops::RangeInclusive<u32> = 2..=16;

/// A loaded plugin library. Never unloaded: the `Library` is leaked, so the entry table and
/// every function pointer in it stay valid for the life of the process.
pub struct LoadedPlugin {
    path: PathBuf,
    table: &'static PluginV1,
    manifest: Manifest,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin").field("path", &self.path).field("manifest", &self.manifest).finish()
    }
}

/// The path of a library named in config: as given when it exists; else, when it has no
/// extension, with the platform's prefix and suffix (`dir/name` → `dir/libname.so`), so a
/// config can name a plugin portably.
pub fn resolve_library_path(path: &Path) -> Result<PathBuf, HostError> {
    // canonical when possible, so messages and `mnemo plugins` show a plain path
    let found = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if path.is_file() {
        return Ok(found(path));
    }
    let mut tried = String::new();
    if path.extension().is_none() {
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            let dir = path.parent().unwrap_or_else(|| Path::new(""));
            let name = name.replace('-', "_");
            let platform = dir.join(format!("{}{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX));
            if platform.is_file() {
                return Ok(found(&platform));
            }
            tried = format!(" (nor {}; build it first, e.g. `cargo build -p <plugin crate>`)", platform.display());
        }
    }
    Err(HostError::NotFound { path: path.to_path_buf(), hint: tried })
}

impl LoadedPlugin {
    /// Load the library at `path` (see `resolve_library_path`), check its ABI and read its
    /// manifest.
    pub fn load(path: &Path) -> Result<LoadedPlugin, HostError> {
        let path = resolve_library_path(path)?;
        // SAFETY: loading a library runs its initialisers. That is the contract of a plugin:
        // the operator names in config a library built for Mnemo; we cannot check its code,
        // only its ABI (below) before calling anything else in it.
        let lib =
            unsafe { Library::new(&path) }.map_err(|source| HostError::NotALibrary { path: path.clone(), source })?;
        // Never unloaded: function pointers and instances inside it must outlive every caller.
        let lib: &'static Library = Box::leak(Box::new(lib));
        // SAFETY: the symbol, if present, is the ABI's `extern "C" fn() -> *const PluginV1`
        // (`EntryV1`); a library exporting that name with another type is not a Mnemo plugin
        // and breaks the contract above.
        let entry = match unsafe { lib.get::<EntryV1>(entry_symbol(ABI_VERSION).as_bytes()) } {
            Ok(symbol) => *symbol,
            Err(_) => return Err(other_version(lib, &path)),
        };
        let table_ptr = entry();
        if table_ptr.is_null() {
            return Err(HostError::NullTable { path });
        }
        // SAFETY: a non-null pointer from the entry point points to the plugin's static table.
        // Only the two leading u32 fields are read before they are checked, and those are at the
        // same offsets in every ABI version.
        let (abi_version, struct_size) = unsafe { ((*table_ptr).abi_version, (*table_ptr).struct_size) };
        if abi_version != ABI_VERSION {
            return Err(HostError::AbiVersion { path, plugin: abi_version, host: ABI_VERSION });
        }
        if struct_size < PLUGIN_V1_SIZE {
            return Err(HostError::TableSize { path, plugin: struct_size, host: PLUGIN_V1_SIZE });
        }
        // SAFETY: version and size are checked: the pointer is a `PluginV1` in the library's
        // static memory, valid for 'static because the library is never unloaded.
        let table: &'static PluginV1 = unsafe { &*table_ptr };
        let label = path.display().to_string();
        let manifest: Manifest = decode(&label, "the manifest request", &take(table, (table.manifest)()))?;
        Ok(LoadedPlugin { path, table, manifest })
    }

    /// Where it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What it says about itself.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// "name version (path)".
    pub fn label(&self) -> String {
        format!("{} {} ({})", self.manifest.name, self.manifest.version, self.path.display())
    }

    /// One blocking call: encode, call, decode. `what` names the request in errors.
    pub fn call<T: DeserializeOwned>(&self, request: &Request, what: &str) -> Result<T, HostError> {
        let plugin = self.manifest.name.clone();
        let bytes = serde_json::to_vec(request).map_err(|e| HostError::MalformedJson {
            plugin: plugin.clone(),
            what: what.to_string(),
            error: format!("the host could not encode the request: {e}"),
        })?;
        let answer = take(self.table, (self.table.call)(bytes.as_ptr(), bytes.len()));
        match decode::<Response>(&plugin, what, &answer)? {
            Response::Ok(v) => serde_json::from_value(v).map_err(|e| HostError::MalformedJson {
                plugin,
                what: what.to_string(),
                error: e.to_string(),
            }),
            Response::Error(message) => Err(HostError::PluginFailed { plugin, what: what.to_string(), message }),
        }
    }
}

/// Copy a plugin-owned buffer and give it back to the plugin.
fn take(table: &PluginV1, buffer: mnemo_plugin_abi::OwnedBuffer) -> Vec<u8> {
    let bytes = if buffer.ptr.is_null() || buffer.len == 0 {
        Vec::new()
    } else {
        // SAFETY: the ABI contract (OwnedBuffer) is that the plugin returns `len` initialised
        // bytes at `ptr`, valid until we pass the buffer to its `free_buffer`, which we do just
        // below and only once.
        unsafe { std::slice::from_raw_parts(buffer.ptr, buffer.len) }.to_vec()
    };
    (table.free_buffer)(buffer);
    bytes
}

fn decode<T: DeserializeOwned>(plugin: &str, what: &str, bytes: &[u8]) -> Result<T, HostError> {
    serde_json::from_slice(bytes).map_err(|e| HostError::MalformedJson {
        plugin: plugin.to_string(),
        what: what.to_string(),
        error: format!("{e} (answer was {:?})", String::from_utf8_lossy(&bytes[..bytes.len().min(120)])),
    })
}

/// No v1 entry: say which version the library was built for, if it is a Mnemo plugin at all.
fn other_version(lib: &Library, path: &Path) -> HostError {
    for v in OTHER_VERSIONS {
        // SAFETY: only the symbol's presence is checked; it is never called.
        if unsafe { lib.get::<*const ()>(entry_symbol(v).as_bytes()) }.is_ok() {
            return HostError::AbiVersion { path: path.to_path_buf(), plugin: v, host: ABI_VERSION };
        }
    }
    HostError::MissingSymbol { path: path.to_path_buf(), symbol: entry_symbol(ABI_VERSION) }
}
