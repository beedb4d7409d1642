//! Requests to instances: decoding, the instance table, encoding. No unsafe code here.
use std::path::Path;
use std::sync::{Arc, Mutex};

use mnemo_plugin_abi::{Created, EmbedderInfo, KindInfo, Manifest, Request, Response};

use crate::{Exports, Instance, PluginError, Settings};

/// The instances this library has built; a handle is an index + 1. Instances live as long as
/// the library (the host never unloads it).
static INSTANCES: Mutex<Vec<Arc<Instance>>> = Mutex::new(Vec::new());

pub(crate) fn manifest(exports: &Exports) -> Manifest {
    Manifest {
        name: exports.name.to_string(),
        version: exports.version.to_string(),
        kinds: exports
            .kinds
            .iter()
            .map(|k| KindInfo { role: k.role, kind: k.kind.to_string(), about: k.about.to_string() })
            .collect(),
    }
}

fn instance(handle: u64) -> Result<Arc<Instance>, PluginError> {
    let all = INSTANCES.lock().map_err(|_| PluginError::new("the instance table is poisoned"))?;
    usize::try_from(handle)
        .ok()
        .and_then(|h| h.checked_sub(1))
        .and_then(|i| all.get(i).cloned())
        .ok_or_else(|| PluginError(format!("no instance {handle}")))
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, PluginError> {
    serde_json::to_value(v).map_err(|e| PluginError(format!("cannot encode the answer: {e}")))
}

fn handle(exports: &Exports, request: Request) -> Result<serde_json::Value, PluginError> {
    match request {
        Request::Create { role, kind, settings, origin, data_dir } => {
            let export =
                exports.kinds.iter().find(|k| k.role == role && k.kind == kind).ok_or_else(|| {
                    PluginError(format!("{} provides no {} kind {kind:?}", exports.name, role.as_str()))
                })?;
            let built = (export.create)(&Settings::new(settings, &origin, Path::new(&data_dir)))?;
            let mut all = INSTANCES.lock().map_err(|_| PluginError::new("the instance table is poisoned"))?;
            all.push(Arc::new(built));
            to_json(&Created { instance: all.len() as u64 })
        }
        Request::Lookup { instance: h, entity, attribute } => match &*instance(h)? {
            Instance::Grounder(lookup) => to_json(&lookup(&entity, &attribute)?),
            _ => Err(PluginError(format!("instance {h} is not a grounder"))),
        },
        Request::EmbedderInfo { instance: h } => match &*instance(h)? {
            Instance::Embedder(model_id, dims, _) => to_json(&EmbedderInfo { model_id: model_id.clone(), dims: *dims }),
            _ => Err(PluginError(format!("instance {h} is not an embedder"))),
        },
        Request::Embed { instance: h, texts } => match &*instance(h)? {
            Instance::Embedder(_, _, embed) => to_json(&embed(&texts)?),
            _ => Err(PluginError(format!("instance {h} is not an embedder"))),
        },
        Request::Assess { instance: h, request } => match &*instance(h)? {
            Instance::Assessor(assess) => to_json(&assess(&request)?),
            _ => Err(PluginError(format!("instance {h} is not an assessor"))),
        },
    }
}

/// Decode, run, encode. Panics are caught one level up (in `ffi`).
pub(crate) fn call(exports: &Exports, bytes: &[u8]) -> Response {
    let request = match serde_json::from_slice::<Request>(bytes) {
        Ok(r) => r,
        Err(e) => return Response::Error(format!("{}: malformed request from the host: {e}", exports.name)),
    };
    match handle(exports, request) {
        Ok(v) => Response::Ok(v),
        Err(e) => Response::Error(e.0),
    }
}
