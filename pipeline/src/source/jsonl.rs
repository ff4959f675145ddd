//! The JSONL message format: one JSON object per line (see `docs/format.md`).
//!
//! ```json
//! {"tenant": "acme", "thread": "t-1", "id": "m-1", "role": "user",
//!  "speaker": "Ana", "content": "…", "ts": "2024-03-01T09:30:00+01:00",
//!  "tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}, "result": {"summary": "sunny"}}]}
//! ```
//!
//! `tenant` (default `""`), `speaker` and `tool_calls` are optional; `id` is a
//! string or an integer; blank lines are skipped; unknown fields are ignored.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};
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
    let value: Value = serde_json::from_str(text)
        .map_err(|e| InputError::item(&at, format!("malformed JSON: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(InputError::item(&at, "expected a JSON object"));
    };
    let tenant = optional_string(&obj, &at, "tenant")?.unwrap_or_default();
    check_name(&at, "tenant", &tenant, true)?;
    let thread = required_string(&obj, &at, "thread")?;
    check_name(&at, "thread", &thread, false)?;
    let external_id = match obj.get("id") {
        None | Some(Value::Null) => return Err(InputError::field(&at, "id", "missing")),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(other) => {
            return Err(InputError::field(
                &at,
                "id",
                format!(
                    "expected a string or an integer, found {}",
                    type_name(other)
                ),
            ));
        }
    };
    check_name(&at, "id", &external_id, false)?;
    let role_text = required_string(&obj, &at, "role")?;
    let role = Role::parse(&role_text).ok_or_else(|| {
        InputError::field(
            &at,
            "role",
            format!("`{role_text}` is not one of user, assistant, tool, system"),
        )
    })?;
    let speaker = optional_string(&obj, &at, "speaker")?;
    let content = required_string(&obj, &at, "content")?;
    let ts = required_string(&obj, &at, "ts")?;
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

fn parse_tool_calls(value: Option<&Value>, at: &Location) -> Result<Vec<ToolCall>, InputError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(InputError::field(
                at,
                "tool_calls",
                format!("expected a list, found {}", type_name(other)),
            ));
        }
    };
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

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn required_string(
    obj: &Map<String, Value>,
    at: &Location,
    key: &str,
) -> Result<String, InputError> {
    optional_string(obj, at, key)?.ok_or_else(|| InputError::field(at, key, "missing"))
}

fn optional_string(
    obj: &Map<String, Value>,
    at: &Location,
    key: &str,
) -> Result<Option<String>, InputError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(InputError::field(
            at,
            key,
            format!("expected a string, found {}", type_name(other)),
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
        let display = path.display().to_string();
        let file = File::open(path).map_err(|source| SourceError::Io {
            file: display.clone(),
            source,
        })?;
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
            let text = match std::str::from_utf8(&self.buf) {
                Ok(t) => t.trim_end_matches(['\n', '\r']),
                Err(e) => {
                    let at = Location {
                        file: self.file.clone(),
                        line: Some(self.line),
                        path: None,
                    };
                    return Some(Ok(Err(Rejected {
                        error: InputError::item(&at, format!("not valid UTF-8: {e}")),
                        input: String::from_utf8_lossy(&self.buf).trim_end().to_owned(),
                    })));
                }
            };
            if text.trim().is_empty() {
                continue;
            }
            let item = parse_line(&self.file, self.line, text).map_err(|error| Rejected {
                error,
                input: text.to_owned(),
            });
            return Some(Ok(item));
        }
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
