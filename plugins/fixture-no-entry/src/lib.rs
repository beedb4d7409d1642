//! A shared library that is not a Mnemo plugin: it exports no `mnemo_plugin_v*` symbol.

/// Something else entirely.
#[allow(unsafe_code)] // `no_mangle`: exported so the library is not empty
#[no_mangle]
pub extern "C" fn not_a_mnemo_plugin() -> u32 {
    42
}
