//! The plugin side of the C boundary. Every `unsafe` block of the SDK is in this module.
#![allow(unsafe_code)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use mnemo_plugin_abi::{OwnedBuffer, PluginV1, Response, ABI_VERSION, PLUGIN_V1_SIZE};

use crate::{dispatch, Exports};

static EXPORTS: OnceLock<&'static Exports> = OnceLock::new();

static TABLE: PluginV1 =
    PluginV1 { abi_version: ABI_VERSION, struct_size: PLUGIN_V1_SIZE, manifest, call, free_buffer };

/// Called by the `mnemo_plugin_v1` symbol that `export_plugin!` generates: remembers the
/// library's exports and returns the entry table (a static: valid for the library's life).
pub fn entry(exports: &'static Exports) -> *const PluginV1 {
    let _ = EXPORTS.set(exports);
    &TABLE
}

fn into_buffer(bytes: Vec<u8>) -> OwnedBuffer {
    let mut bytes = std::mem::ManuallyDrop::new(bytes);
    OwnedBuffer { ptr: bytes.as_mut_ptr(), len: bytes.len(), cap: bytes.capacity() }
}

fn encode(response: &Response) -> OwnedBuffer {
    let bytes = serde_json::to_vec(response)
        .unwrap_or_else(|_| br#"{"error":"the plugin could not encode its answer"}"#.to_vec());
    into_buffer(bytes)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

extern "C" fn manifest() -> OwnedBuffer {
    let answer = catch_unwind(|| match EXPORTS.get() {
        Some(e) => serde_json::to_vec(&dispatch::manifest(e)).unwrap_or_default(),
        None => Vec::new(),
    });
    into_buffer(answer.unwrap_or_default())
}

extern "C" fn call(ptr: *const u8, len: usize) -> OwnedBuffer {
    let bytes: &[u8] = if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the ABI contract (PluginV1::call) is that the host passes `len` initialised
        // bytes at `ptr`, which it owns and keeps alive and unchanged for the whole call.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    };
    let Some(exports) = EXPORTS.get() else {
        return encode(&Response::Error("call before the entry point".to_string()));
    };
    // A panic must not unwind into the host (it would abort the process): it fails this call.
    let response = catch_unwind(AssertUnwindSafe(|| dispatch::call(exports, bytes))).unwrap_or_else(|p| {
        Response::Error(format!("plugin {} panicked: {}", exports.name, panic_message(p.as_ref())))
    });
    encode(&response)
}

extern "C" fn free_buffer(buffer: OwnedBuffer) {
    if buffer.ptr.is_null() {
        return;
    }
    // SAFETY: the host gives back, once and unchanged, a buffer that `into_buffer` made from a
    // `Vec<u8>` of this library's allocator with exactly this pointer, length and capacity.
    drop(unsafe { Vec::from_raw_parts(buffer.ptr, buffer.len, buffer.cap) });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use crate::{Export, Grounded, GrounderPlugin, PluginError, Settings};

    struct Echo;
    impl GrounderPlugin for Echo {
        const KIND: &'static str = "echo";
        const ABOUT: &'static str = "echoes; panics on entity \"boom\"";
        fn new(_: &Settings) -> Result<Self, PluginError> {
            Ok(Echo)
        }
        fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<Grounded>, PluginError> {
            if entity == "boom" {
                panic!("boom");
            }
            Ok(Some(Grounded { value: format!("{entity}/{attribute}"), source: "echo".into(), as_of: None }))
        }
    }
    static EX: Exports = Exports { name: "echo-plugin", version: "0.0.1", kinds: &[Export::grounder::<Echo>()] };

    fn call_json(t: &PluginV1, s: &str) -> Response {
        let b = (t.call)(s.as_ptr(), s.len());
        let v: Response = serde_json::from_slice(unsafe { std::slice::from_raw_parts(b.ptr, b.len) }).unwrap();
        (t.free_buffer)(b);
        v
    }

    #[test]
    fn the_table_answers_and_catches_panics() {
        let t = unsafe { &*entry(&EX) };
        assert_eq!((t.abi_version, t.struct_size), (ABI_VERSION, PLUGIN_V1_SIZE));
        let created = call_json(
            t,
            r#"{"op":"create","role":"grounder","kind":"echo","settings":{},"origin":"t","data_dir":"/d"}"#,
        );
        let Response::Ok(v) = created else { panic!("{created:?}") };
        let h = v["instance"].as_u64().unwrap();
        let ok = call_json(t, &format!(r#"{{"op":"lookup","instance":{h},"entity":"a","attribute":"b"}}"#));
        assert_eq!(ok, Response::Ok(serde_json::json!({"value": "a/b", "source": "echo"})));
        let boom = call_json(t, &format!(r#"{{"op":"lookup","instance":{h},"entity":"boom","attribute":"b"}}"#));
        assert!(matches!(&boom, Response::Error(m) if m.contains("panicked") && m.contains("boom")), "{boom:?}");
        let bad = call_json(t, "{not json");
        assert!(matches!(&bad, Response::Error(m) if m.contains("malformed request")), "{bad:?}");
        let unknown = call_json(
            t,
            r#"{"op":"create","role":"embedder","kind":"echo","settings":{},"origin":"t","data_dir":"/d"}"#,
        );
        assert!(matches!(&unknown, Response::Error(m) if m.contains("no embedder kind")), "{unknown:?}");
    }
}
