//! A JSON value that borrows its strings from the document it was read
//! from ([`JsonValue`]), for the export readers: most strings of an export
//! (node ids, roles, content types, metadata) are only looked at, so
//! reading them as `serde_json::Value` spent an allocation on each. A
//! string without escapes is borrowed; one with escapes is decoded into an
//! owned string, as `serde_json` must.
//!
//! Objects keep their members in document order; a key given twice
//! resolves to its last value, as in `serde_json::Value`.

use std::borrow::{Borrow, Cow};
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A JSON value whose strings borrow from the input when they can.
#[derive(Clone, PartialEq, Debug)]
pub(crate) enum JsonValue<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<JsonValue<'a>>),
    Object(Vec<(JsonStr<'a>, JsonValue<'a>)>),
}

impl<'a> JsonValue<'a> {
    /// The member `key` of an object (its last value when given twice).
    pub fn get(&self, key: &str) -> Option<&JsonValue<'a>> {
        match self {
            Self::Object(members) => members
                .iter()
                .rev()
                .find(|(k, _)| k.as_str() == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }

    /// How an error names this value's JSON type (as
    /// [`super::jsonl::type_name`] does for a `serde_json::Value`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "a boolean",
            Self::Number(_) => "a number",
            Self::String(_) => "a string",
            Self::Array(_) => "a list",
            Self::Object(_) => "an object",
        }
    }

    /// The same value as a `serde_json::Value` (what `canonical_json`
    /// takes).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => Value::Bool(*b),
            Self::Number(n) => Value::Number(n.clone()),
            Self::String(s) => Value::String(s.as_ref().to_owned()),
            Self::Array(items) => Value::Array(items.iter().map(Self::to_value).collect()),
            Self::Object(members) => {
                let mut map = Map::new();
                // In order: a later duplicate replaces an earlier one.
                for (k, v) in members {
                    map.insert(k.as_str().to_owned(), v.to_value());
                }
                Value::Object(map)
            }
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonValue<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor(std::marker::PhantomData))
    }
}

struct ValueVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ValueVisitor<'a> {
    type Value = JsonValue<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(JsonValue::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(JsonValue::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        JsonValue::deserialize(d)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(JsonValue::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(JsonValue::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(JsonValue::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        // As `serde_json::Value`: a float JSON cannot hold becomes null.
        Ok(Number::from_f64(v).map_or(JsonValue::Null, JsonValue::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(JsonValue::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(JsonValue::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(JsonValue::String(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(JsonValue::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(entry) = map.next_entry()? {
            members.push(entry);
        }
        Ok(JsonValue::Object(members))
    }
}

/// A JSON string that borrows from the input when it has no escapes: an
/// object key, or a map key such as a ChatGPT node id.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct JsonStr<'a>(pub Cow<'a, str>);

impl JsonStr<'_> {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for JsonStr<'_> {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor(std::marker::PhantomData))
    }
}

struct StrVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
    type Value = JsonStr<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(JsonStr(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(JsonStr(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(JsonStr(Cow::Owned(v)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn it_reads_as_serde_json_does_and_borrows_plain_strings() {
        let text = r#"{"a":[1,-2,2.5,1e400,true,null,"x\ny"],"b":{"k":"plain"},"a":"again","u":18446744073709551615}"#;
        // 1e400 is beyond f64: serde_json refuses it, and so does this.
        assert!(serde_json::from_str::<JsonValue<'_>>(text).is_err());
        assert!(serde_json::from_str::<Value>(text).is_err());
        let text = text.replace("1e400", "1e300");
        let ours: JsonValue<'_> = serde_json::from_str(&text).unwrap();
        let theirs: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(ours.to_value(), theirs);
        // The last of a repeated key, as serde_json keeps.
        assert_eq!(ours.get("a").and_then(JsonValue::as_str), Some("again"));
        let JsonValue::String(plain) = ours.get("b").and_then(|b| b.get("k")).unwrap() else {
            panic!("not a string");
        };
        assert!(matches!(plain, Cow::Borrowed("plain")));
        let escaped: JsonValue<'_> = serde_json::from_str(r#""x\ny""#).unwrap();
        assert!(matches!(escaped, JsonValue::String(Cow::Owned(ref s)) if s == "x\ny"));
        assert_eq!(ours.get("missing"), None);
        assert_eq!(ours.get("u").map(JsonValue::type_name), Some("a number"));
    }
}
