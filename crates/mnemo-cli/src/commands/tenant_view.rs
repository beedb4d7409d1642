//! The JSON a tenant is shown carries nothing store-wide: a memory's `rev` and an event's `seq`
//! count the changes of every namespace (they are the index's watermark unit), so B could read
//! A's write volume off them. They are left out of the engine commands' `--json` output; ids
//! are per namespace already (see the stores' id schemes).
use anyhow::Result;
use serde_json::Value;

/// Print `v` as pretty JSON with the store-wide counters and the embedding vectors removed.
pub fn emit<T: serde::Serialize>(v: &T) -> Result<()> {
    let mut v = serde_json::to_value(v)?;
    mnemo_core::json_view::strip_vectors(&mut v);
    redact(&mut v);
    out!("{}", serde_json::to_string_pretty(&v)?);
    Ok(())
}

/// Remove `rev` from memories and `seq` from memory events, at any depth.
pub fn redact(v: &mut Value) {
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
            map.values_mut().for_each(redact);
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_removed_at_any_depth_and_nothing_else() {
        let mut v = serde_json::json!({
            "items": [{"memory": {"id": 5, "namespace": "b", "content": "x", "rev": 912}}],
            "events": [{"seq": 77, "memory": 5, "event": "created", "at": 1}],
            "rev": 3
        });
        redact(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "items": [{"memory": {"id": 5, "namespace": "b", "content": "x"}}],
                "events": [{"memory": 5, "event": "created", "at": 1}],
                "rev": 3
            })
        );
    }
}
