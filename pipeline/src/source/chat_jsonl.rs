//! Chat-completion logs: one JSON object per line with a `messages` array
//! of `{role, content}` (fine-tuning datasets, model-proxy logs).
//!
//! ```json
//! {"id": "req-1", "created": 1714560000, "messages": [
//!   {"role": "system", "content": "You are terse."},
//!   {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
//!   {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
//!     "function": {"name": "weather", "arguments": "{\"city\":\"Lisbon\"}"}}]},
//!   {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]}
//! ```
//!
//! Each line is one thread, named by its `id` (string or integer) or, when
//! it has none, by the first 32 hex digits of the blake3 hash of the line.
//! A message's external id is its index in `messages`. Times: a message's
//! own `created_at`/`timestamp`/`ts`, else the line's (`created`,
//! `created_at`, `timestamp` or `ts`; RFC 3339 or epoch seconds) or, when
//! the line gives none, `--start`, plus one second per message index.
//! Details in `docs/format.md` (§3.9).

use serde_json::{Map, Value};
use strataflow_log::SourceTime;
use strataflow_log::record::{Role, ToolCall};

use super::export::{Ctx, Draft, Parsed, Skip, type_name};
use super::{InputError, Location, Rejected, SourceItem, canonical_json, check_name};

/// The time fields read, in order of preference.
const TIME_FIELDS: [&str; 4] = ["created", "created_at", "timestamp", "ts"];

/// Reads one line (1-based `line`): its messages, nothing for a blank line,
/// or one rejected item.
pub(crate) fn line(ctx: &Ctx, line: usize, bytes: &[u8]) -> Vec<SourceItem> {
    let at = Location {
        file: ctx.file.clone(),
        line: Some(line),
        path: None,
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) if line == 1 => t.strip_prefix('\u{feff}').unwrap_or(t),
        Ok(t) => t,
        Err(e) => {
            return vec![Err(Rejected {
                error: InputError::item(&at, format!("not valid UTF-8: {e}")),
                input: String::from_utf8_lossy(bytes).trim_end().to_owned(),
            })];
        }
    };
    let text = text.trim_end_matches(['\n', '\r']);
    if text.trim().is_empty() {
        return Vec::new();
    }
    super::export::conversation_items_at(ctx, &at, text.as_bytes(), |at| read(ctx, at, text))
}

fn read(ctx: &Ctx, at: &Location, text: &str) -> Result<Parsed, InputError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| InputError::item(at, format!("malformed JSON: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(InputError::item(at, "expected a JSON object"));
    };
    let thread = match obj.get("id") {
        None | Some(Value::Null) => {
            let hash = blake3::hash(text.trim().as_bytes()).to_hex();
            hash.get(..32).unwrap_or_default().to_owned()
        }
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(other) => {
            return Err(InputError::field(
                at,
                "id",
                format!(
                    "expected a string or an integer, found {}",
                    type_name(other)
                ),
            ));
        }
    };
    check_name(at, "id", &thread, false)?;
    let base = match first_time(at, &obj, &TIME_FIELDS, "")? {
        Some(t) => Some(t),
        None => ctx.settings.start,
    };
    let messages = match obj.get("messages") {
        Some(Value::Array(m)) => m,
        None => return Err(InputError::field(at, "messages", "missing")),
        Some(other) => {
            return Err(InputError::field(
                at,
                "messages",
                format!("expected a list, found {}", type_name(other)),
            ));
        }
    };
    let mut drafts = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let prefix = format!("messages[{i}].");
        let field = |f: &str| format!("{prefix}{f}");
        let Value::Object(m) = m else {
            return Err(InputError::field(
                at,
                &format!("messages[{i}]"),
                format!("expected an object, found {}", type_name(m)),
            ));
        };
        let role_text = match m.get("role") {
            Some(Value::String(s)) => s.as_str(),
            None => return Err(InputError::field(at, &field("role"), "missing")),
            Some(other) => {
                return Err(InputError::field(
                    at,
                    &field("role"),
                    format!("expected a string, found {}", type_name(other)),
                ));
            }
        };
        let role = match role_text {
            "developer" => Role::System,
            "function" => Role::Tool,
            other => Role::parse(other).ok_or_else(|| {
                InputError::field(
                    at,
                    &field("role"),
                    format!(
                        "`{other}` is not one of user, assistant, tool, system, developer, function"
                    ),
                )
            })?,
        };
        let content = content(at, &field("content"), m.get("content"))?;
        let tool_calls = tool_calls(at, &prefix, m)?;
        if content.trim().is_empty() && tool_calls.is_empty() {
            ctx.skipped(Skip::Empty, 1);
            continue;
        }
        let speaker = match m.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            _ => None,
        };
        let own = first_time(at, m, &TIME_FIELDS[1..], &prefix)?;
        let time = match (own, base) {
            (Some(t), _) => t,
            (None, Some(b)) => SourceTime {
                utc_ms: b.utc_ms.saturating_add(1000 * i as i64),
                offset_minutes: b.offset_minutes,
            },
            (None, None) => {
                return Err(InputError::field(
                    at,
                    "created",
                    "no time: the line has no `created`, `created_at`, `timestamp` or `ts`, and no --start was given",
                ));
            }
        };
        drafts.push(Draft {
            external_id: i.to_string(),
            role,
            speaker,
            content,
            tool_calls,
            time,
            inferred: false,
        });
    }
    Ok(Parsed {
        thread,
        title: None,
        extra: Vec::new(),
        time: None,
        drafts,
    })
}

/// The first of `fields` the object gives, as a time.
fn first_time(
    at: &Location,
    obj: &Map<String, Value>,
    fields: &[&str],
    prefix: &str,
) -> Result<Option<SourceTime>, InputError> {
    for f in fields {
        match obj.get(*f) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => {
                return SourceTime::parse_rfc3339(s).map(Some).ok_or_else(|| {
                    InputError::field(
                        at,
                        &format!("{prefix}{f}"),
                        format!("`{s}` is not an RFC 3339 time"),
                    )
                });
            }
            Some(Value::Number(n)) => {
                let secs = n.as_f64().unwrap_or(f64::NAN);
                if !secs.is_finite() || secs.abs() > 1e11 {
                    return Err(InputError::field(
                        at,
                        &format!("{prefix}{f}"),
                        format!("`{n}` is not a time in epoch seconds"),
                    ));
                }
                #[allow(clippy::cast_possible_truncation)]
                let ms = (secs * 1000.0).round() as i64;
                return Ok(Some(SourceTime::utc_without_offset(ms)));
            }
            Some(other) => {
                return Err(InputError::field(
                    at,
                    &format!("{prefix}{f}"),
                    format!(
                        "expected RFC 3339 text or epoch seconds, found {}",
                        type_name(other)
                    ),
                ));
            }
        }
    }
    Ok(None)
}

/// `content`: a string, `null`, or a list of parts.
fn content(at: &Location, field: &str, v: Option<&Value>) -> Result<String, InputError> {
    let parts = match v {
        None | Some(Value::Null) => return Ok(String::new()),
        Some(Value::String(s)) => return Ok(s.clone()),
        Some(Value::Array(parts)) => parts,
        Some(other) => {
            return Err(InputError::field(
                at,
                field,
                format!(
                    "expected a string or a list of parts, found {}",
                    type_name(other)
                ),
            ));
        }
    };
    let mut texts = Vec::new();
    for part in parts {
        let text = match part {
            Value::String(s) => Some(s.clone()),
            Value::Object(p) => {
                let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_owned);
                match p.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" | "input_text" | "output_text" => s("text"),
                    "refusal" => s("refusal"),
                    "image_url" | "input_image" => {
                        let url = match p.get("image_url") {
                            Some(Value::String(u)) => Some(u.clone()),
                            Some(Value::Object(o)) => {
                                o.get("url").and_then(Value::as_str).map(str::to_owned)
                            }
                            _ => None,
                        };
                        Some(format!(
                            "[image: {}]",
                            url.as_deref().map_or(String::new(), short_url)
                        ))
                    }
                    "input_audio" => Some("[audio]".to_owned()),
                    "file" | "input_file" => {
                        let name = p
                            .get("file")
                            .and_then(|f| f.get("filename"))
                            .and_then(Value::as_str)
                            .or_else(|| p.get("filename").and_then(Value::as_str))
                            .unwrap_or("");
                        Some(format!("[file: {name}]"))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(t) = text.filter(|t| !t.is_empty()) {
            texts.push(t);
        }
    }
    Ok(texts.join("\n"))
}

/// A data URL is shown by its type and size, not its bytes.
fn short_url(url: &str) -> String {
    match url.strip_prefix("data:") {
        Some(rest) => {
            let kind = rest.split([',', ';']).next().unwrap_or("");
            format!("data:{kind} ({} bytes)", url.len())
        }
        None => url.to_owned(),
    }
}

/// `tool_calls` (OpenAI's `{id, type, function: {name, arguments}}` or a
/// flat `{name, arguments}`) and the legacy `function_call`.
fn tool_calls(
    at: &Location,
    prefix: &str,
    m: &Map<String, Value>,
) -> Result<Vec<ToolCall>, InputError> {
    let mut out = Vec::new();
    let mut one = |field: String, call: &Value| -> Result<(), InputError> {
        let Value::Object(call) = call else {
            return Err(InputError::field(at, &field, "expected an object"));
        };
        let f = match call.get("function") {
            Some(Value::Object(f)) => f,
            _ => call,
        };
        let name = match f.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Err(InputError::field(
                    at,
                    &format!("{field}.name"),
                    "missing or not a non-empty string",
                ));
            }
        };
        let arguments = match f.get("arguments") {
            None | Some(Value::Null) => None,
            // Arguments are JSON text in the API; kept as JSON when they parse.
            Some(Value::String(s)) => Some(serde_json::from_str::<Value>(s).map_or_else(
                |_| canonical_json(&Value::String(s.clone())),
                |v| canonical_json(&v),
            )),
            Some(v) => Some(canonical_json(v)),
        };
        out.push(ToolCall {
            name,
            arguments,
            result: None,
        });
        Ok(())
    };
    match m.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => {
            for (j, c) in calls.iter().enumerate() {
                one(format!("{prefix}tool_calls[{j}]"), c)?;
            }
        }
        Some(other) => {
            return Err(InputError::field(
                at,
                &format!("{prefix}tool_calls"),
                format!("expected a list, found {}", type_name(other)),
            ));
        }
    }
    if let Some(c) = m.get("function_call").filter(|v| !v.is_null()) {
        one(format!("{prefix}function_call"), c)?;
    }
    Ok(out)
}
