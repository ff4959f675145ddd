//! A JSON reader with the semantics of JavaScript's `JSON.parse`, for the
//! tool-payload summaries (spec §4.2).
//!
//! The summaries depend on the order in which JavaScript enumerates an
//! object's properties (which tool names come first, the order of
//! `key: length` counts). `serde_json::Value` without the `preserve_order`
//! feature sorts keys, and that feature can be switched on by any crate in a
//! build through feature unification, so this reader keeps its own order:
//! array-index keys ascending, then the other keys in first-appearance order;
//! a repeated key keeps its first position and takes its last value. Numbers
//! are `f64` as in JavaScript (`1e400` is infinity, not an error); an
//! unpaired `\u` surrogate escape becomes U+FFFD because Rust strings cannot
//! hold it. Nesting deeper than [`MAX_DEPTH`] is treated as unparsable.

use std::collections::HashMap;

/// Deepest array/object nesting accepted (bounds the reader's recursion).
const MAX_DEPTH: usize = 512;

/// A parsed JSON value with JavaScript's property order.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum JsValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// Any number, as an IEEE double.
    Number(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<JsValue>),
    /// An object's own properties in JavaScript enumeration order.
    Object(Vec<(String, JsValue)>),
}

impl JsValue {
    /// The value of property `key` of an object (`None` for non-objects and
    /// for missing keys, i.e. JavaScript's `undefined`).
    pub(super) fn get(&self, key: &str) -> Option<&JsValue> {
        match self {
            Self::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether an object has own property `key` (JavaScript's `key in obj`
    /// for the properties a parsed object can have).
    pub(super) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

impl From<&serde_json::Value> for JsValue {
    fn from(value: &serde_json::Value) -> Self {
        match value {
            serde_json::Value::Null => Self::Null,
            serde_json::Value::Bool(b) => Self::Bool(*b),
            // Without serde_json's `arbitrary_precision` every number has
            // an f64, so the default is never taken.
            serde_json::Value::Number(n) => Self::Number(
                n.as_f64()
                    .or_else(|| n.to_string().parse().ok())
                    .unwrap_or_default(),
            ),
            serde_json::Value::String(s) => Self::String(s.clone()),
            serde_json::Value::Array(items) => Self::Array(items.iter().map(Self::from).collect()),
            serde_json::Value::Object(map) => Self::Object(js_property_order(
                map.iter()
                    .map(|(k, v)| (k.clone(), Self::from(v)))
                    .collect(),
            )),
        }
    }
}

/// `String(n)` in JavaScript.
pub(super) fn js_number_to_string(n: f64) -> String {
    if n.is_nan() {
        return "NaN".to_owned();
    }
    if n == 0.0 {
        return "0".to_owned();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if (1e-6..1e21).contains(&n.abs()) {
        // Rust's `Display` for floats prints the shortest round-trip digits
        // without an exponent, as JavaScript does in this range.
        return format!("{n}");
    }
    let exponential = format!("{n:e}");
    match exponential.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
        _ => exponential,
    }
}

/// The array index a property key denotes, if it is one (canonical decimal
/// below 2^32 − 1); such keys enumerate first, in ascending order.
fn array_index(key: &str) -> Option<u32> {
    if key == "0" {
        return Some(0);
    }
    let mut chars = key.chars();
    let first = chars.next()?;
    if !('1'..='9').contains(&first) || key.len() > 10 || !chars.all(|c| c.is_ascii_digit()) {
        return None;
    }
    key.parse::<u64>()
        .ok()
        .filter(|&n| n < u64::from(u32::MAX))
        .and_then(|n| u32::try_from(n).ok())
}

/// Reorders distinct-key entries into JavaScript enumeration order.
fn js_property_order(entries: Vec<(String, JsValue)>) -> Vec<(String, JsValue)> {
    let (mut indexed, named): (Vec<_>, Vec<_>) = entries
        .into_iter()
        .map(|(k, v)| (array_index(&k), k, v))
        .partition(|(index, _, _)| index.is_some());
    indexed.sort_by_key(|(index, _, _)| *index);
    indexed
        .into_iter()
        .chain(named)
        .map(|(_, k, v)| (k, v))
        .collect()
}

/// Parses `text` like `JSON.parse`; `None` where `JSON.parse` would throw.
pub(super) fn parse(text: &str) -> Option<JsValue> {
    let mut parser = Parser { text, pos: 0 };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    (parser.pos == text.len()).then_some(value)
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, literal: &str) -> Option<()> {
        let rest = self.text.as_bytes().get(self.pos..)?;
        if rest.starts_with(literal.as_bytes()) {
            self.pos += literal.len();
            Some(())
        } else {
            None
        }
    }

    fn value(&mut self, depth: usize) -> Option<JsValue> {
        match self.peek()? {
            b'n' => self.eat("null").map(|()| JsValue::Null),
            b't' => self.eat("true").map(|()| JsValue::Bool(true)),
            b'f' => self.eat("false").map(|()| JsValue::Bool(false)),
            b'"' => self.string().map(JsValue::String),
            b'[' => self.array(depth + 1),
            b'{' => self.object(depth + 1),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn array(&mut self, depth: usize) -> Option<JsValue> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        self.skip_ws();
        let mut items = Vec::new();
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(JsValue::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(JsValue::Array(items));
                }
                _ => return None,
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<JsValue> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        self.skip_ws();
        let mut entries: Vec<(String, JsValue)> = Vec::new();
        let mut positions: HashMap<String, usize> = HashMap::new();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(JsValue::Object(entries));
        }
        loop {
            self.skip_ws();
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            self.skip_ws();
            self.eat(":")?;
            self.skip_ws();
            let value = self.value(depth)?;
            match positions.get(&key).and_then(|&i| entries.get_mut(i)) {
                Some(slot) => slot.1 = value,
                None => {
                    positions.insert(key.clone(), entries.len());
                    entries.push((key, value));
                }
            }
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(JsValue::Object(js_property_order(entries)));
                }
                _ => return None,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Option<JsValue> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        self.text
            .get(start..self.pos)?
            .parse::<f64>()
            .ok()
            .map(JsValue::Number)
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.pos..self.pos + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// Reads a string starting at its opening quote.
    fn string(&mut self) -> Option<String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            // Only ASCII bytes stop the scan, so `start..pos` is always on
            // char boundaries.
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(self.text.get(start..self.pos)?);
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(out);
                }
                b'\\' => {
                    self.pos += 1;
                    let escape = self.peek()?;
                    self.pos += 1;
                    let c = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return None,
                    };
                    out.push(c);
                }
                // An unescaped control character.
                _ => return None,
            }
        }
    }

    /// Decodes the code unit after `\u`, pairing surrogates.
    fn unicode_escape(&mut self) -> Option<char> {
        let unit = self.hex4()?;
        if (0xD800..0xDC00).contains(&unit) {
            let save = self.pos;
            if self.eat("\\u").is_some()
                && let Some(low) = self.hex4().filter(|low| (0xDC00..0xE000).contains(low))
            {
                let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                return Some(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
            self.pos = save;
            return Some('\u{FFFD}');
        }
        Some(char::from_u32(unit).unwrap_or('\u{FFFD}'))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn keys(value: &JsValue) -> Vec<&str> {
        match value {
            JsValue::Object(entries) => entries.iter().map(|(k, _)| k.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn parses_like_json_parse() {
        assert_eq!(parse(" null "), Some(JsValue::Null));
        assert_eq!(parse("true"), Some(JsValue::Bool(true)));
        assert_eq!(parse("-1.5e2"), Some(JsValue::Number(-150.0)));
        assert_eq!(parse("1e400"), Some(JsValue::Number(f64::INFINITY)));
        assert_eq!(
            parse(r#""a\n\u00e9\ud83d\ude00""#),
            Some(JsValue::String("a\né😀".into()))
        );
        assert_eq!(
            parse(r#""\ud800x""#),
            Some(JsValue::String("\u{FFFD}x".into()))
        );
        assert_eq!(
            parse("[1, [2], {}]").map(|v| matches!(v, JsValue::Array(a) if a.len() == 3)),
            Some(true)
        );
        for bad in [
            "",
            "01",
            "1.",
            ".5",
            "+1",
            "[1,]",
            "{\"a\":1,}",
            "{a:1}",
            "'a'",
            "\"a\nb\"",
            "nul",
            "1 2",
            "\u{a0}1",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn keeps_javascript_property_order() {
        let value = parse(r#"{"b":1,"a":2,"10":3,"2":4,"b":5,"01":6}"#).unwrap();
        assert_eq!(keys(&value), ["2", "10", "b", "a", "01"]);
        assert_eq!(value.get("b"), Some(&JsValue::Number(5.0)));
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "[".repeat(100_000);
        assert_eq!(parse(&deep), None);
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(parse(&ok).is_some());
    }

    #[test]
    fn numbers_print_like_javascript() {
        let cases = [
            (1.0, "1"),
            (-0.0, "0"),
            (0.1, "0.1"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123.456, "123.456"),
            (-42.0, "-42"),
            (f64::INFINITY, "Infinity"),
        ];
        for (n, expected) in cases {
            assert_eq!(js_number_to_string(n), expected);
        }
    }

    #[test]
    fn converts_serde_values_in_javascript_order() {
        let value: serde_json::Value = serde_json::from_str(r#"{"b":[1],"10":2,"2":3}"#).unwrap();
        assert_eq!(keys(&JsValue::from(&value)), ["2", "10", "b"]);
    }
}
