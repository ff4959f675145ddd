//! Claude's data export: `conversations.json` (alone or inside the export
//! ZIP), a JSON array of conversations.
//!
//! ```json
//! [{"uuid": "c1", "name": "Lisbon trip", "created_at": "2024-05-01T10:00:00.000000Z",
//!   "chat_messages": [{"uuid": "m1", "sender": "human", "created_at": "2024-05-01T10:00:01Z",
//!     "text": "Hi", "content": [{"type": "text", "text": "Hi"}],
//!     "attachments": [{"file_name": "notes.txt", "extracted_content": "…"}], "files": []}]}]
//! ```
//!
//! Each conversation is one thread named by its `uuid`; `chat_messages` are
//! taken in order, `sender` `human` → user, `assistant` → assistant. What
//! each message becomes is documented in `docs/format.md` (§3.8); the
//! conversation's `name` (and `summary`) are kept in the thread's header.

use serde::Deserialize;
use serde_json::Value;
use strataflow_log::SourceTime;
use strataflow_log::record::{Role, ToolCall};

use super::export::{
    Ctx, Draft, Parsed, Skip, TimeCursor, optional_list, parsed_conversation_items, type_name,
};
use super::{InputError, Location, canonical_json, check_name};

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    uuid: Option<Value>,
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    summary: Option<Value>,
    #[serde(default)]
    created_at: Option<Value>,
    #[serde(default)]
    chat_messages: Option<Vec<Message>>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    uuid: Option<Value>,
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    sender: Option<Value>,
    #[serde(default)]
    created_at: Option<Value>,
    #[serde(default)]
    attachments: Option<Value>,
    #[serde(default)]
    files: Option<Value>,
}

#[derive(Deserialize)]
struct Names {
    #[serde(default)]
    uuid: Option<Value>,
}

fn id_of(bytes: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Names>(bytes).ok()?.uuid? {
        Value::String(s) if !s.trim().is_empty() => Some(s),
        _ => None,
    }
}

/// Reads one conversation (an element of the array). It is parsed once;
/// only a conversation that does not parse is looked at again, for its id.
pub(crate) fn conversation(
    ctx: &Ctx,
    index: u64,
    offset: u64,
    bytes: &[u8],
) -> Vec<super::SourceItem> {
    parsed_conversation_items(
        ctx,
        index,
        offset,
        bytes,
        serde_json::from_slice::<Conversation>(bytes),
        |c| match &c.uuid {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            _ => None,
        },
        id_of,
        |at, c| read(ctx, at, c),
    )
}

fn string_field(
    at: &Location,
    field: &str,
    v: Option<&Value>,
) -> Result<Option<String>, InputError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(InputError::field(
            at,
            field,
            format!("expected a string, found {}", type_name(other)),
        )),
    }
}

fn time_field(
    at: &Location,
    field: &str,
    v: Option<&Value>,
) -> Result<Option<SourceTime>, InputError> {
    match string_field(at, field, v)? {
        None => Ok(None),
        Some(s) if s.trim().is_empty() => Ok(None),
        Some(s) => SourceTime::parse_rfc3339(&s).map(Some).ok_or_else(|| {
            InputError::field(
                at,
                field,
                format!("`{s}` is not an RFC 3339 time (e.g. 2024-05-01T10:00:00Z)"),
            )
        }),
    }
}

fn read(ctx: &Ctx, at: &Location, c: Conversation) -> Result<Parsed, InputError> {
    let thread = string_field(at, "uuid", c.uuid.as_ref())?
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| InputError::field(at, "uuid", "missing"))?;
    check_name(at, "uuid", &thread, false)?;
    let title = string_field(at, "name", c.name.as_ref())?;
    let summary = string_field(at, "summary", c.summary.as_ref())?.filter(|s| !s.is_empty());
    let conversation_time = time_field(at, "created_at", c.created_at.as_ref())?;
    let messages = c
        .chat_messages
        .ok_or_else(|| InputError::field(at, "chat_messages", "missing"))?;
    let mut times = TimeCursor::new(conversation_time);
    let mut drafts = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let field = |f: &str| format!("chat_messages[{i}].{f}");
        let own = time_field(at, &field("created_at"), m.created_at.as_ref())?;
        let (time, inferred) = times.take(own);
        let external_id = string_field(at, &field("uuid"), m.uuid.as_ref())?
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| InputError::field(at, &field("uuid"), "missing"))?;
        check_name(at, &field("uuid"), &external_id, false)?;
        let sender = string_field(at, &field("sender"), m.sender.as_ref())?
            .ok_or_else(|| InputError::field(at, &field("sender"), "missing"))?;
        let role = match sender.as_str() {
            "human" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                return Err(InputError::field(
                    at,
                    &field("sender"),
                    format!("`{other}` is neither `human` nor `assistant`"),
                ));
            }
        };
        let (mut content, tool_calls) = blocks(at, &field("content"), m.content.as_ref())?;
        if content.is_empty() {
            content = string_field(at, &field("text"), m.text.as_ref())?.unwrap_or_default();
        }
        attachments(
            at,
            &field("attachments"),
            m.attachments.as_ref(),
            &mut content,
        )?;
        files(at, &field("files"), m.files.as_ref(), &mut content)?;
        if content.trim().is_empty() && tool_calls.is_empty() {
            ctx.skipped(Skip::Empty, 1);
            continue;
        }
        let Some(time) = time else {
            return Err(InputError::field(
                at,
                &field("created_at"),
                "missing, and neither an earlier message nor the conversation has a time",
            ));
        };
        drafts.push(Draft {
            external_id,
            role,
            speaker: None,
            content,
            tool_calls,
            time,
            inferred,
        });
    }
    let mut extra = Vec::new();
    if let Some(s) = summary {
        extra.push(("summary", Value::String(s)));
    }
    Ok(Parsed {
        thread,
        title,
        extra,
        time: conversation_time,
        drafts,
    })
}

/// The text and tool calls of `content` blocks: `text` blocks joined by a
/// blank line, `tool_use` as a call (its `input` the arguments), a
/// `tool_result` as the result of the call it answers (or a call of its
/// own), an `image` as `[image: name]`; `thinking` and unknown blocks are
/// left out.
fn blocks(
    at: &Location,
    field: &str,
    v: Option<&Value>,
) -> Result<(String, Vec<ToolCall>), InputError> {
    let items = optional_list(at, field, v)?;
    let mut texts: Vec<String> = Vec::new();
    let mut calls: Vec<(Option<String>, ToolCall)> = Vec::new();
    for (j, block) in items.iter().enumerate() {
        let Value::Object(b) = block else {
            return Err(InputError::field(
                at,
                &format!("{field}[{j}]"),
                format!("expected an object, found {}", type_name(block)),
            ));
        };
        let s = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_owned);
        match b.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                if let Some(t) = s("text").filter(|t| !t.is_empty()) {
                    texts.push(t);
                }
            }
            "tool_use" => {
                let name = s("name").filter(|n| !n.trim().is_empty()).ok_or_else(|| {
                    InputError::field(at, &format!("{field}[{j}].name"), "missing or empty")
                })?;
                calls.push((
                    s("id"),
                    ToolCall {
                        name,
                        arguments: b.get("input").filter(|v| !v.is_null()).map(canonical_json),
                        result: None,
                    },
                ));
            }
            "tool_result" => {
                let result = b
                    .get("content")
                    .filter(|v| !v.is_null())
                    .map(canonical_json);
                let name = s("name");
                let by_id = s("tool_use_id").and_then(|id| {
                    calls
                        .iter()
                        .position(|(cid, c)| cid.as_deref() == Some(&id) && c.result.is_none())
                });
                let answered = by_id.or_else(|| {
                    calls
                        .iter()
                        .rposition(|(_, c)| c.result.is_none() && Some(&c.name) == name.as_ref())
                });
                if let Some((_, call)) = answered.and_then(|k| calls.get_mut(k)) {
                    call.result = result;
                } else {
                    calls.push((
                        None,
                        ToolCall {
                            name: s("name")
                                .filter(|n| !n.trim().is_empty())
                                .unwrap_or_else(|| "tool".to_owned()),
                            arguments: None,
                            result,
                        },
                    ));
                }
            }
            "image" => texts.push(format!(
                "[image: {}]",
                s("file_name").or_else(|| s("name")).unwrap_or_default()
            )),
            _ => {}
        }
    }
    Ok((
        texts.join("\n\n"),
        calls.into_iter().map(|(_, c)| c).collect(),
    ))
}

/// Attachments' extracted text, after the message text, each as
/// `[attachment: NAME]` and its text on the following lines.
fn attachments(
    at: &Location,
    field: &str,
    v: Option<&Value>,
    content: &mut String,
) -> Result<(), InputError> {
    let items = optional_list(at, field, v)?;
    for (j, a) in items.iter().enumerate() {
        let Value::Object(a) = a else {
            return Err(InputError::field(
                at,
                &format!("{field}[{j}]"),
                "expected an object",
            ));
        };
        let name = a.get("file_name").and_then(Value::as_str).unwrap_or("");
        let text = a
            .get("extracted_content")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !content.is_empty() {
            content.push_str("\n\n");
        }
        content.push_str(&format!("[attachment: {name}]"));
        if !text.is_empty() {
            content.push('\n');
            content.push_str(text);
        }
    }
    Ok(())
}

/// Uploaded files (no text in the export) as `[file: NAME]`.
fn files(
    at: &Location,
    field: &str,
    v: Option<&Value>,
    content: &mut String,
) -> Result<(), InputError> {
    let items = optional_list(at, field, v)?;
    for f in items {
        let name = f
            .get("file_name")
            .and_then(Value::as_str)
            .or_else(|| f.get("file_uuid").and_then(Value::as_str))
            .unwrap_or("");
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&format!("[file: {name}]"));
    }
    Ok(())
}
