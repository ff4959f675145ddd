//! The JSONL message format: one JSON object per line (see `docs/format.md`).
//!
//! ```json
//! {"tenant": "acme", "thread": "t-1", "id": "m-1", "role": "user",
//!  "speaker": "Ana", "content": "…", "ts": "2024-03-01T09:30:00+01:00",
//!  "tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}, "result": {"summary": "sunny"}}]}
//! ```
//!
//! `tenant` (default `""`), `speaker` and `tool_calls` are optional; `id` is a
//! string or an integer; blank lines are skipped; unknown fields are ignored
//! (skipped without being parsed, so a number too large for a float there is
//! no error); a UTF-8 byte order mark at the start of the file is skipped.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use strataflow_log::SourceTime;
use strataflow_log::record::{Role, ToolCall};

use super::{
    InputError, Location, MessageInput, Rejected, SourceError, SourceItem, canonical_json,
    check_name,
};

/// Parses one line (1-based `line` number) of a JSONL file.
pub fn parse_line(file: &str, line: usize, text: &str) -> Result<MessageInput, InputError> {
    let at = Location {
        file: file.to_owned(),
        line: Some(line),
        path: None,
    };
    let mut obj = read_fields(text).map_err(|problem| InputError::item(&at, problem))?;
    // default: no `tenant` is the default tenant "" (README input format).
    let tenant = optional_string(&mut obj, &at, "tenant")?.unwrap_or_default();
    check_name(&at, "tenant", &tenant, true)?;
    let thread = required_string(&mut obj, &at, "thread")?;
    check_name(&at, "thread", &thread, false)?;
    let external_id = match obj.take("id") {
        None => return Err(InputError::field(&at, "id", "missing")),
        Some(Value::String(s)) => s,
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(other) => {
            return Err(InputError::field(
                &at,
                "id",
                format!(
                    "expected a string or an integer, found {}",
                    type_name(&other)
                ),
            ));
        }
    };
    check_name(&at, "id", &external_id, false)?;
    let role_text = required_string(&mut obj, &at, "role")?;
    let role = Role::parse(&role_text).ok_or_else(|| {
        InputError::field(
            &at,
            "role",
            format!("`{role_text}` is not one of user, assistant, tool, system"),
        )
    })?;
    let speaker = optional_string(&mut obj, &at, "speaker")?;
    let content = required_string(&mut obj, &at, "content")?;
    let ts = required_string(&mut obj, &at, "ts")?;
    let time = SourceTime::parse_rfc3339(&ts).ok_or_else(|| {
        InputError::field(
            &at,
            "ts",
            format!("`{ts}` is not an RFC 3339 time (e.g. 2024-03-01T09:30:00Z)"),
        )
    })?;
    let tool_calls = parse_tool_calls(obj.get("tool_calls"), &at)?;
    Ok(MessageInput {
        location: at,
        tenant,
        thread,
        external_id,
        role,
        speaker,
        content,
        tool_calls,
        time,
    })
}

/// The fields of the format, in the order of [`KNOWN`].
const KNOWN: [&str; 8] = [
    "tenant",
    "thread",
    "id",
    "role",
    "speaker",
    "content",
    "ts",
    "tool_calls",
];

/// The fields of the format a line gave, as JSON values (`Some(Null)` for
/// `null`); any other field is skipped unparsed (`IgnoredAny`), so whatever
/// it holds (a number beyond `f64`, a deep value) cannot refuse the line. A
/// field given twice keeps its last value, as in a JSON object.
#[derive(Default)]
struct Fields([Option<Value>; KNOWN.len()]);

impl Fields {
    /// A field as the line gave it.
    fn get(&self, key: &str) -> Option<&Value> {
        let i = KNOWN.iter().position(|k| *k == key)?;
        self.0.get(i)?.as_ref()
    }

    /// A field as the line gave it, moved out (read once: no copy).
    fn take(&mut self, key: &str) -> Option<Value> {
        let i = KNOWN.iter().position(|k| *k == key)?;
        self.0.get_mut(i)?.take()
    }
}

/// Visits the line's object.
struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::default();
        while let Some(Key(key)) = map.next_key::<Key>()? {
            match key.and_then(|i| fields.0.get_mut(i)) {
                Some(slot) => *slot = Some(map.next_value::<Value>()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(fields)
    }
}

/// A key of the line: the index in [`KNOWN`] of one of the format's
/// fields, or `None` for any other (read without allocating).
struct Key(Option<usize>);

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(KNOWN.iter().position(|k| *k == v)))
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// Parses a line into its fields, or says why it is not a JSON object.
fn read_fields(text: &str) -> Result<Fields, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let fields = de
        .deserialize_any(FieldsVisitor)
        .and_then(|fields| de.end().map(|()| fields));
    fields.map_err(|e| {
        // Valid JSON that is not an object (a list, a number…).
        if e.is_data() && serde_json::from_str::<IgnoredAny>(text).is_ok() {
            "expected a JSON object".to_owned()
        } else {
            format!("malformed JSON: {e}")
        }
    })
}

fn parse_tool_calls(value: Option<&Value>, at: &Location) -> Result<Vec<ToolCall>, InputError> {
    let items = optional_list(at, "tool_calls", value)?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = format!("tool_calls[{i}]");
            let Value::Object(call) = item else {
                return Err(InputError::field(at, &field, "expected an object"));
            };
            let name = match call.get("name") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                _ => {
                    return Err(InputError::field(
                        at,
                        &format!("{field}.name"),
                        "missing or not a non-empty string",
                    ));
                }
            };
            let json = |key: &str| match call.get(key) {
                None | Some(Value::Null) => None,
                Some(v) => Some(canonical_json(v)),
            };
            Ok(ToolCall {
                name,
                arguments: json("arguments"),
                result: json("result"),
            })
        })
        .collect()
}

/// A field that may be absent or null (no items) or a list; anything else
/// is refused, naming `field` and what it found.
pub(crate) fn optional_list<'a>(
    at: &Location,
    field: &str,
    v: Option<&'a Value>,
) -> Result<&'a [Value], InputError> {
    match v {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(InputError::field(
            at,
            field,
            format!("expected a list, found {}", type_name(other)),
        )),
    }
}

/// How an error names the JSON type it found.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A required field: absent is "missing"; `null` is a value of the wrong
/// type, reported as such.
fn required_string(obj: &mut Fields, at: &Location, key: &str) -> Result<String, InputError> {
    match obj.take(key) {
        None => Err(InputError::field(at, key, "missing")),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(InputError::field(
            at,
            key,
            format!("expected a string, found {}", type_name(&other)),
        )),
    }
}

/// An optional field: absent and `null` are both "not given".
fn optional_string(
    obj: &mut Fields,
    at: &Location,
    key: &str,
) -> Result<Option<String>, InputError> {
    match obj.take(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(InputError::field(
            at,
            key,
            format!("expected a string, found {}", type_name(&other)),
        )),
    }
}

/// Reads a JSONL file line by line.
pub struct JsonlReader {
    file: String,
    reader: BufReader<File>,
    line: usize,
    buf: Vec<u8>,
}

impl JsonlReader {
    /// Opens `path`; errors name the file as `display` (the path as typed).
    pub fn open(path: &Path) -> Result<Self, SourceError> {
        let (display, file) = open_named(path)?;
        Ok(Self {
            file: display,
            reader: BufReader::with_capacity(1 << 20, file),
            line: 0,
            buf: Vec::new(),
        })
    }
}

impl Iterator for JsonlReader {
    type Item = Result<SourceItem, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => {
                    return Some(Err(SourceError::Io {
                        file: self.file.clone(),
                        source,
                    }));
                }
            }
            self.line += 1;
            if let Some(item) = item_of_line(&self.file, self.line, &self.buf) {
                return Some(Ok(item));
            }
        }
    }
}

/// Opens `path`, with the name errors give it (the path as typed).
fn open_named(path: &Path) -> Result<(String, File), SourceError> {
    let display = path.display().to_string();
    match File::open(path) {
        Ok(file) => Ok((display, file)),
        Err(source) => Err(SourceError::Io {
            file: display,
            source,
        }),
    }
}

/// The item of one line of a JSONL file (its bytes, with or without the
/// line end; 1-based `line`), or `None` for a blank line.
fn item_of_line(file: &str, line: usize, bytes: &[u8]) -> Option<SourceItem> {
    let text = match std::str::from_utf8(bytes) {
        // A byte order mark (written by some Windows tools) is not part of
        // the first line.
        Ok(t) if line == 1 => t.strip_prefix('\u{feff}').unwrap_or(t),
        Ok(t) => t,
        Err(e) => {
            let at = Location {
                file: file.to_owned(),
                line: Some(line),
                path: None,
            };
            return Some(Err(Rejected {
                error: InputError::item(&at, format!("not valid UTF-8: {e}")),
                input: String::from_utf8_lossy(bytes).trim_end().to_owned(),
            }));
        }
    };
    let text = text.trim_end_matches(['\n', '\r']);
    if text.trim().is_empty() {
        return None;
    }
    Some(parse_line(file, line, text).map_err(|error| Rejected {
        error,
        input: text.to_owned(),
    }))
}

/// A run of whole lines of a JSONL file, read by [`JsonlChunks`].
#[derive(Debug)]
pub struct JsonlChunk {
    /// The 1-based number of its first line.
    pub first_line: usize,
    /// The lines, each with its line end (the file's last may have none).
    pub bytes: Vec<u8>,
}

impl JsonlChunk {
    /// The chunk's items, in order (blank lines skipped), each parsed as
    /// [`JsonlReader`] parses it.
    pub fn items<'a>(&'a self, file: &'a str) -> impl Iterator<Item = SourceItem> + 'a {
        self.bytes
            .split_inclusive(|&b| b == b'\n')
            .enumerate()
            .filter_map(move |(k, line)| item_of_line(file, self.first_line + k, line))
    }
}

/// A JSONL file read as runs of whole lines of about [`JsonlChunks::BYTES`]
/// (a longer line makes a longer chunk), for parsing on several threads:
/// the chunks' items, in chunk order, are the [`JsonlReader`]'s items.
pub struct JsonlChunks {
    file: String,
    reader: BufReader<File>,
    /// Bytes read at a time (a chunk is at least one line).
    bytes: usize,
    /// The number of the next chunk's first line.
    next_line: usize,
    /// Bytes read after the last whole line.
    rest: Vec<u8>,
    done: bool,
}

impl JsonlChunks {
    /// Bytes read per chunk.
    pub const BYTES: usize = 1 << 20;

    /// Opens `path`; errors name the file as `display` (the path as typed).
    pub fn open(path: &Path) -> Result<Self, SourceError> {
        let (display, file) = open_named(path)?;
        Ok(Self {
            file: display,
            reader: BufReader::with_capacity(Self::BYTES, file),
            bytes: Self::BYTES,
            next_line: 1,
            rest: Vec::new(),
            done: false,
        })
    }

    /// Reads `bytes` at a time instead of [`JsonlChunks::BYTES`] (at least
    /// 1): smaller chunks, more of them.
    #[must_use]
    pub fn with_chunk_bytes(mut self, bytes: usize) -> Self {
        self.bytes = bytes.max(1);
        self
    }

    /// The file's name as errors give it.
    pub fn file(&self) -> &str {
        &self.file
    }
}

impl Iterator for JsonlChunks {
    type Item = Result<JsonlChunk, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        use std::io::Read;
        while !self.done {
            let start = self.rest.len();
            self.rest.resize(start + self.bytes, 0);
            let read = match self
                .reader
                .read(self.rest.get_mut(start..).unwrap_or_default())
            {
                Ok(read) => read,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
                Err(source) => {
                    self.done = true;
                    return Some(Err(SourceError::Io {
                        file: self.file.clone(),
                        source,
                    }));
                }
            };
            self.rest.truncate(start + read);
            if read == 0 {
                // The end: the last line, with or without its line end.
                self.done = true;
                break;
            }
            // Cut after the last line end; what follows waits for more.
            if let Some(end) = memchr::memrchr(b'\n', &self.rest) {
                let tail = self.rest.split_off(end + 1);
                let bytes = std::mem::replace(&mut self.rest, tail);
                return Some(Ok(self.chunk(bytes)));
            }
        }
        if self.rest.is_empty() {
            return None;
        }
        let bytes = std::mem::take(&mut self.rest);
        Some(Ok(self.chunk(bytes)))
    }
}

impl JsonlChunks {
    fn chunk(&mut self, bytes: Vec<u8>) -> JsonlChunk {
        let first_line = self.next_line;
        self.next_line += memchr::memchr_iter(b'\n', &bytes).count();
        JsonlChunk { first_line, bytes }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const GOOD: &str =
        r#"{"thread":"t","id":"m1","role":"user","content":"hi","ts":"2024-03-01T09:30:00+01:00"}"#;

    #[test]
    fn parses_a_minimal_line_with_defaults() {
        let m = parse_line("f.jsonl", 1, GOOD).unwrap();
        assert_eq!(m.tenant, "");
        assert_eq!(m.thread, "t");
        assert_eq!(m.role, Role::User);
        assert_eq!(m.time.offset_minutes, Some(60));
        assert!(m.tool_calls.is_empty());
    }

    #[test]
    fn tool_calls_are_kept_as_canonical_json() {
        let line = r#"{"thread":"t","id":7,"role":"assistant","content":"","ts":"2024-03-01T09:30:00Z","tool_calls":[{"name":"w","arguments":{"b":1,"a":2},"result":"ok"}]}"#;
        let m = parse_line("f", 1, line).unwrap();
        assert_eq!(m.external_id, "7");
        assert_eq!(
            m.tool_calls[0].arguments.as_deref(),
            Some(r#"{"a":2,"b":1}"#)
        );
        assert_eq!(m.tool_calls[0].result.as_deref(), Some(r#""ok""#));
    }

    #[test]
    fn unknown_fields_are_skipped_unparsed() {
        let huge = format!(
            r#"{{"x":1e400,"y":{},"z":[{{"w":-1E+999}}],{}"#,
            "9".repeat(400),
            GOOD.trim_start_matches('{')
        );
        let m = parse_line("f", 1, &huge).unwrap();
        assert_eq!(m.external_id, "m1");
        // The last of a repeated field wins, as in a JSON object.
        let twice = GOOD.replace(r#""content":"hi""#, r#""content":"a","content":"hi""#);
        assert_eq!(parse_line("f", 1, &twice).unwrap().content, "hi");
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let cases = [
            ("{not json", None, "malformed JSON"),
            (
                r#"{"id":"1","role":"user","content":"x","ts":"2024-01-01T00:00:00Z"}"#,
                Some("thread"),
                "missing",
            ),
            (
                r#"{"thread":"t","id":"1","role":"bot","content":"x","ts":"2024-01-01T00:00:00Z"}"#,
                Some("role"),
                "not one of",
            ),
            (
                r#"{"thread":"t","id":"1","role":"user","content":"x","ts":"yesterday"}"#,
                Some("ts"),
                "RFC 3339",
            ),
            (
                r#"{"thread":"t","id":"1","role":"user","content":5,"ts":"2024-01-01T00:00:00Z"}"#,
                Some("content"),
                "a number",
            ),
            (
                r#"{"thread":"t","id":"1","role":"user","content":"x","ts":"2024-01-01T00:00:00Z","tool_calls":[{}]}"#,
                Some("tool_calls[0].name"),
                "missing",
            ),
            (
                r#"{"thread":"","id":"1","role":"user","content":"x","ts":"2024-01-01T00:00:00Z"}"#,
                Some("thread"),
                "empty",
            ),
            (
                r#"{"thread":"t","id":"1","role":"user","content":null,"ts":"2024-01-01T00:00:00Z"}"#,
                Some("content"),
                "expected a string, found null",
            ),
            (
                r#"{"thread":"t","id":null,"role":"user","content":"x","ts":"2024-01-01T00:00:00Z"}"#,
                Some("id"),
                "found null",
            ),
            ("[1]", None, "expected a JSON object"),
            (r#"{"thread":"t"} x"#, None, "malformed JSON"),
        ];
        for (line, field, problem) in cases {
            let e = parse_line("in.jsonl", 42, line).unwrap_err();
            assert_eq!(e.location.line, Some(42));
            assert_eq!(e.field.as_deref(), field, "{e}");
            assert!(e.problem.contains(problem), "{e}");
            assert!(e.to_string().starts_with("in.jsonl:42: "), "{e}");
        }
    }
}
