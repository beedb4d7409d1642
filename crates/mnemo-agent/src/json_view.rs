//! JSON as a reader wants it: embedding vectors are hundreds of floats per memory that no
//! script or agent reads, so reports leave them out unless asked (`--with-vectors`); and a
//! tenant is never shown the store-wide change counters (a memory's `rev`, an event's `seq`):
//! they count every namespace's writes, so B could read A's write volume off them. Every door
//! (CLI, HTTP, MCP) shows tenants [`tenant_json`]: that, with ids spelt as a tenant reads them
//! (`m42`, `t17`: see `mnemo_contract::ids`).
use serde_json::Value;

/// `v` as the JSON a tenant is shown: ids as short ids, then [`tenant_view`].
pub fn tenant_json<T: serde::Serialize + ?Sized>(v: &T, with_vectors: bool) -> serde_json::Result<Value> {
    let mut json = mnemo_contract::tenant_spelling(|| serde_json::to_value(v))?;
    tenant_view(&mut json, with_vectors);
    Ok(json)
}

/// What a tenant is shown of `value`: store-wide counters removed, vectors shortened unless
/// `with_vectors`.
pub fn tenant_view(value: &mut Value, with_vectors: bool) {
    if !with_vectors {
        strip_vectors(value);
    }
    redact_store_counters(value);
}

/// Remove `rev` from memories and `seq` from memory events, at any depth.
pub fn redact_store_counters(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let is_memory = ["id", "namespace", "content", "rev"].iter().all(|k| map.contains_key(*k));
            let is_event = ["seq", "memory", "event"].iter().all(|k| map.contains_key(*k));
            if is_memory {
                map.remove("rev");
            }
            if is_event {
                map.remove("seq");
            }
            map.values_mut().for_each(redact_store_counters);
        }
        Value::Array(items) => items.iter_mut().for_each(redact_store_counters),
        _ => {}
    }
}

/// Replace every embedding (`{"model": …, "vector": [numbers]}`) anywhere in `value` with
/// `{"model": …, "dims": N}`: which model embedded the memory and how wide the vector is stay
/// visible; the floats go.
pub fn strip_vectors(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(e) = map.get_mut("embedding") {
                shorten_embedding(e);
            }
            for (key, v) in map.iter_mut() {
                if key != "embedding" {
                    strip_vectors(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_vectors),
        _ => {}
    }
}

/// An embedding object becomes `{"model", "dims"}`; anything else under the key is left alone.
fn shorten_embedding(e: &mut Value) {
    let Value::Object(map) = e else { return };
    let dims = match map.get("vector") {
        Some(Value::Array(v)) if map.len() == 2 && map.contains_key("model") && v.iter().all(Value::is_number) => {
            v.len()
        }
        _ => return,
    };
    map.remove("vector");
    map.insert("dims".to_string(), Value::from(dims));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn vectors_are_replaced_by_their_width_everywhere() {
        let mut v = json!({
            "memory": {"id": 1, "embedding": {"model": "fake-384", "vector": [0.5, -0.25, 0.0]}},
            "items": [{"memory": {"embedding": {"model": "m", "vector": [1.0]}}}, {"embedding": null}],
            "content": "vector"
        });
        strip_vectors(&mut v);
        assert_eq!(v["memory"]["embedding"], json!({"model": "fake-384", "dims": 3}));
        assert_eq!(v["items"][0]["memory"]["embedding"], json!({"model": "m", "dims": 1}));
        assert_eq!(v["items"][1]["embedding"], Value::Null);
        assert_eq!(v["content"], "vector");
        assert_eq!(v["memory"]["id"], 1);
    }

    #[test]
    fn counters_are_removed_at_any_depth_and_nothing_else() {
        let mut v = json!({
            "items": [{"memory": {"id": 5, "namespace": "b", "content": "x", "rev": 912}}],
            "events": [{"seq": 77, "memory": 5, "event": "created", "at": 1}],
            "rev": 3
        });
        redact_store_counters(&mut v);
        assert_eq!(
            v,
            json!({
                "items": [{"memory": {"id": 5, "namespace": "b", "content": "x"}}],
                "events": [{"memory": 5, "event": "created", "at": 1}],
                "rev": 3
            })
        );
    }

    #[test]
    fn other_shapes_under_the_key_are_left_alone() {
        let mut v = json!({"embedding": {"model": "m", "vector": ["not", "numbers"]}, "x": {"embedding": "text"}});
        let before = v.clone();
        strip_vectors(&mut v);
        assert_eq!(v, before);
    }
}
