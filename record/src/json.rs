//! Canonical JSON text, for every hash or id computed over JSON.
//!
//! `serde_json::Value` sorts object keys only while serde_json's
//! `preserve_order` feature is off, and any crate in a build can switch it
//! on through feature unification; bytes that are hashed must not depend on
//! that, so they go through [`canonical_json`].

/// Canonical JSON text: object keys sorted by their UTF-8 bytes, no
/// insignificant whitespace, numbers as serde_json prints them. Independent
/// of serde_json's `preserve_order` feature.
pub fn canonical_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_canonical_json(value, &mut out);
    out
}

/// Appends the canonical JSON text of `value` (see [`canonical_json`]) to
/// `out`.
pub fn write_canonical_json(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical_json(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical_json(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{ "b": 1, "a": {"z": [1, {"y": 2, "x": 1}], "c": "é"} }"#)
                .unwrap();
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"c":"é","z":[1,{"x":1,"y":2}]},"b":1}"#
        );
    }
}
