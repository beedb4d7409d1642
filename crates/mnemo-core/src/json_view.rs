//! JSON as a reader wants it: embedding vectors are hundreds of floats per memory that no
//! script or agent reads, so reports leave them out unless asked (`--with-vectors`).
use serde_json::Value;

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
    fn other_shapes_under_the_key_are_left_alone() {
        let mut v = json!({"embedding": {"model": "m", "vector": ["not", "numbers"]}, "x": {"embedding": "text"}});
        let before = v.clone();
        strip_vectors(&mut v);
        assert_eq!(v, before);
    }
}
