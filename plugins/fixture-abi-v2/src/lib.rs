//! A library built for plugin ABI version 2 (which does not exist yet): the v1 host must refuse
//! it naming both versions, without calling it.

/// The leading fields every ABI version shares.
#[repr(C)]
pub struct Header {
    /// 2.
    pub abi_version: u32,
    /// The table's size.
    pub struct_size: u32,
}

static TABLE: Header = Header { abi_version: 2, struct_size: 8 };

/// The ABI v2 entry point.
#[allow(unsafe_code)] // `no_mangle`: the entry symbol is the ABI
#[no_mangle]
pub extern "C" fn mnemo_plugin_v2() -> *const Header {
    &TABLE
}
