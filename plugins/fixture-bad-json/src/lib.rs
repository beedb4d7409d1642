//! A hand-written ABI v1 plugin: a valid handshake and manifest, a `bad_json` grounder that
//! can be created, and lookups answered with malformed JSON. Buffers point at static bytes,
//! so freeing them is a no-op.
use mnemo_plugin_abi::{OwnedBuffer, PluginV1, ABI_VERSION, PLUGIN_V1_SIZE};

const MANIFEST: &[u8] =
    br#"{"name":"fixture-bad-json","version":"0.1.0","kinds":[{"role":"grounder","kind":"bad_json","about":"test fixture: answers malformed JSON"}]}"#;
const CREATED: &[u8] = br#"{"ok":{"instance":1}}"#;
const MALFORMED: &[u8] = br#"{"ok":{"value":"35 da"#;

fn buffer(bytes: &'static [u8]) -> OwnedBuffer {
    OwnedBuffer { ptr: bytes.as_ptr().cast_mut(), len: bytes.len(), cap: bytes.len() }
}

extern "C" fn manifest() -> OwnedBuffer {
    buffer(MANIFEST)
}

extern "C" fn call(ptr: *const u8, len: usize) -> OwnedBuffer {
    if ptr.is_null() {
        return buffer(MALFORMED);
    }
    // SAFETY: the ABI contract is that the host passes `len` initialised bytes at `ptr`, alive
    // for the whole call.
    #[allow(unsafe_code)]
    let request = unsafe { std::slice::from_raw_parts(ptr, len) };
    if request.starts_with(br#"{"op":"create""#) {
        buffer(CREATED)
    } else {
        buffer(MALFORMED)
    }
}

extern "C" fn free_buffer(_: OwnedBuffer) {}

static TABLE: PluginV1 =
    PluginV1 { abi_version: ABI_VERSION, struct_size: PLUGIN_V1_SIZE, manifest, call, free_buffer };

/// The ABI v1 entry point.
#[allow(unsafe_code)] // `no_mangle`: the entry symbol is the ABI
#[no_mangle]
pub extern "C" fn mnemo_plugin_v1() -> *const PluginV1 {
    &TABLE
}
