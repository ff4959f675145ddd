//! ChatGPT's data export: `conversations.json` (alone or inside the export
//! ZIP), a JSON array of conversations, each a tree of message nodes.
//!
//! ```json
//! [{"id": "c1", "conversation_id": "c1", "title": "Lisbon trip", "create_time": 1714560000.5,
//!   "current_node": "n3",
//!   "mapping": {"n0": {"id": "n0", "message": null, "parent": null, "children": ["n1"]},
//!               "n1": {"id": "n1", "parent": "n0", "children": ["n2"], "message": {
//!                  "author": {"role": "user"}, "create_time": 1714560001.25,
//!                  "content": {"content_type": "text", "parts": ["Hi"]}, "recipient": "all"}}, …}}]
//! ```
//!
//! Each conversation is one thread, named by its `conversation_id` (or
//! `id`). Its messages are those on the path from the root to
//! `current_node` (the branch the user last saw), in order; nodes an edit or
//! a regeneration left behind are skipped (counted). What each message
//! becomes is documented in `docs/format.md` (§3.7); the conversation's
//! title and the ids of messages whose time was inferred are kept in the
//! thread's header (described in [`super::export`]).

use std::collections::HashMap;

use serde::Deserialize;
use strataflow_log::SourceTime;
use strataflow_log::record::{Role, ToolCall};

use super::export::{Ctx, Draft, Skip, TimeCursor, parsed_conversation_items};
use super::json_value::{JsonStr, JsonValue};
use super::{InputError, Location, canonical_json, check_name};

#[derive(Deserialize)]
struct Conversation<'a> {
    #[serde(default, borrow)]
    title: Option<JsonValue<'a>>,
    #[serde(default, borrow)]
    create_time: Option<JsonValue<'a>>,
    #[serde(default, borrow)]
    update_time: Option<JsonValue<'a>>,
    #[serde(default, borrow)]
    mapping: Option<HashMap<JsonStr<'a>, Node<'a>>>,
    #[serde(default, borrow)]
    current_node: Option<JsonValue<'a>>,
    #[serde(default, borrow)]
    conversation_id: Option<JsonValue<'a>>,
    #[serde(default, borrow)]
    id: Option<JsonValue<'a>>,
}

/// A node of `mapping`. Its message is boxed: the map moves its nodes as
/// it grows, and a message is ten times the size of the rest.
#[derive(Deserialize)]
struct Node<'a> {
    #[serde(default, borrow)]
    message: Option<Box<Message<'a>>>,
    #[serde(default, borrow)]
    parent: Option<JsonValue<'a>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    author: Option<Author<'a>>,
    #[serde(default, borrow)]
    create_time: Option<JsonValue<'a>>,
    #[serde(default, borrow)]
    content: Option<JsonValue<'a>>,
    #[serde(default, borrow)]
    metadata: Option<Metadata<'a>>,
    #[serde(default, borrow)]
    recipient: Option<JsonValue<'a>>,
}

#[derive(Deserialize)]
struct Author<'a> {
    #[serde(default, borrow)]
    role: Option<JsonValue<'a>>,
    #[serde(default, borrow)]
    name: Option<JsonValue<'a>>,
}

#[derive(Deserialize)]
struct Metadata<'a> {
    #[serde(default, borrow)]
    is_visually_hidden_from_conversation: Option<JsonValue<'a>>,
}

/// Just the names of a conversation, to name one that does not parse.
#[derive(Deserialize)]
struct Names<'a> {
    #[serde(default, borrow)]
    conversation_id: Option<JsonValue<'a>>,
    #[serde(default, borrow)]
    id: Option<JsonValue<'a>>,
}

/// The conversation's id from a document that did not parse as one.
fn id_of(bytes: &[u8]) -> Option<String> {
    let names: Names<'_> = serde_json::from_slice(bytes).ok()?;
    thread_name(names.conversation_id.as_ref(), names.id.as_ref())
}

fn thread_name(
    conversation_id: Option<&JsonValue<'_>>,
    id: Option<&JsonValue<'_>>,
) -> Option<String> {
    [conversation_id, id]
        .into_iter()
        .flatten()
        .find_map(|v| match v {
            JsonValue::String(s) if !s.trim().is_empty() => Some(s.as_ref().to_owned()),
            _ => None,
        })
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
        serde_json::from_slice::<Conversation<'_>>(bytes),
        |c| thread_name(c.conversation_id.as_ref(), c.id.as_ref()),
        id_of,
        |at, c| read(ctx, at, c),
    )
}

/// The messages of a parsed conversation.
fn read(
    ctx: &Ctx,
    at: &Location,
    c: Conversation<'_>,
) -> Result<super::export::Parsed, InputError> {
    let thread = thread_name(c.conversation_id.as_ref(), c.id.as_ref())
        .ok_or_else(|| InputError::field(at, "conversation_id", "missing (and no `id`)"))?;
    check_name(at, "conversation_id", &thread, false)?;
    let title = match &c.title {
        None | Some(JsonValue::Null) => None,
        Some(JsonValue::String(s)) => Some(s.as_ref().to_owned()),
        Some(other) => {
            return Err(InputError::field(
                at,
                "title",
                format!("expected a string, found {}", other.type_name()),
            ));
        }
    };
    let conversation_time = match epoch_time(at, "create_time", c.create_time.as_ref())? {
        Some(t) => Some(t),
        None => epoch_time(at, "update_time", c.update_time.as_ref())?,
    };
    let mapping = c
        .mapping
        .ok_or_else(|| InputError::field(at, "mapping", "missing"))?;
    let current = match &c.current_node {
        Some(JsonValue::String(s)) => s.as_ref(),
        None | Some(JsonValue::Null) => {
            return Err(InputError::field(
                at,
                "current_node",
                "missing: the branch to import is unknown",
            ));
        }
        Some(other) => {
            return Err(InputError::field(
                at,
                "current_node",
                format!("expected a node id (string), found {}", other.type_name()),
            ));
        }
    };
    if !mapping.contains_key(current) {
        return Err(InputError::field(
            at,
            "current_node",
            format!("`{current}` is not a node of `mapping`"),
        ));
    }

    // Root → current_node, through the parent links.
    let mut path: Vec<(&str, &Node)> = Vec::new();
    let mut visited = std::collections::HashSet::new();
    let mut cursor = current;
    loop {
        let Some((key, node)) = mapping.get_key_value(cursor) else {
            let child = path.last().map_or("", |(k, _)| *k);
            return Err(InputError::field(
                at,
                &format!("mapping.{child}.parent"),
                format!("`{cursor}` is not a node of `mapping`"),
            ));
        };
        let key = key.as_str();
        if !visited.insert(key) {
            // The node whose parent link closes the cycle.
            let child = path.last().map_or(key, |(k, _)| *k);
            return Err(InputError::field(
                at,
                &format!("mapping.{child}.parent"),
                format!("the parent links form a cycle (back to `{key}`)"),
            ));
        }
        path.push((key, node));
        match &node.parent {
            None | Some(JsonValue::Null) => break,
            Some(JsonValue::String(p)) => cursor = p.as_ref(),
            Some(other) => {
                return Err(InputError::field(
                    at,
                    &format!("mapping.{key}.parent"),
                    format!("expected a node id or null, found {}", other.type_name()),
                ));
            }
        }
    }
    path.reverse();
    let on_path = path.iter().filter(|(_, n)| n.message.is_some()).count();
    let all = mapping.values().filter(|n| n.message.is_some()).count();
    ctx.skipped(Skip::Branch, (all - on_path) as u64);

    let mut times = TimeCursor::new(conversation_time);
    let mut drafts = Vec::new();
    for (key, node) in path {
        let Some(message) = &node.message else {
            continue;
        };
        let field = |f: &str| format!("mapping.{key}.message.{f}");
        let own_time = epoch_time(at, &field("create_time"), message.create_time.as_ref())?;
        let role_text = match message.author.as_ref().and_then(|a| a.role.as_ref()) {
            Some(JsonValue::String(s)) => s.as_ref(),
            None => return Err(InputError::field(at, &field("author.role"), "missing")),
            Some(other) => {
                return Err(InputError::field(
                    at,
                    &field("author.role"),
                    format!("expected a string, found {}", other.type_name()),
                ));
            }
        };
        let role = Role::parse(role_text).ok_or_else(|| {
            InputError::field(
                at,
                &field("author.role"),
                format!("`{role_text}` is not one of user, assistant, tool, system"),
            )
        })?;
        let author_name = match message.author.as_ref().and_then(|a| a.name.as_ref()) {
            Some(JsonValue::String(s)) if !s.trim().is_empty() => Some(s.as_ref().to_owned()),
            _ => None,
        };
        let hidden = matches!(
            message
                .metadata
                .as_ref()
                .and_then(|m| m.is_visually_hidden_from_conversation.as_ref()),
            Some(JsonValue::Bool(true))
        );
        // The time of a skipped message still dates the ones after it.
        let (time, inferred) = times.take(own_time);
        if hidden {
            ctx.skipped(Skip::Hidden, 1);
            continue;
        }
        let Some(text) = content_text(at, &field("content"), message.content.as_ref())? else {
            ctx.skipped(Skip::Unsupported, 1);
            continue;
        };
        let mut tool_calls = Vec::new();
        if role == Role::Tool {
            tool_calls.push(ToolCall {
                name: author_name.clone().unwrap_or_else(|| "tool".to_owned()),
                arguments: None,
                result: message
                    .content
                    .as_ref()
                    .map(|c| canonical_json(&c.to_value())),
            });
        } else if let Some(JsonValue::String(r)) = &message.recipient
            && r != "all"
            && !r.trim().is_empty()
        {
            // Addressed to a tool (code to `python`, a query to `browser`):
            // the call is named, its text is the content.
            tool_calls.push(ToolCall {
                name: r.as_ref().to_owned(),
                arguments: None,
                result: None,
            });
        }
        if text.trim().is_empty() && tool_calls.is_empty() {
            ctx.skipped(Skip::Empty, 1);
            continue;
        }
        let Some(time) = time else {
            return Err(InputError::field(
                at,
                &field("create_time"),
                "missing, and neither an earlier message nor the conversation has a time",
            ));
        };
        check_name(at, &format!("mapping.{key}"), key, false)?;
        drafts.push(Draft {
            external_id: key.to_owned(),
            role,
            speaker: if role == Role::Tool {
                author_name
            } else {
                None
            },
            content: text,
            tool_calls,
            time,
            inferred,
        });
    }
    Ok(super::export::Parsed {
        thread,
        title,
        extra: Vec::new(),
        time: conversation_time,
        drafts,
    })
}

/// Epoch seconds (fractional) as a UTC instant whose offset is unknown;
/// absent or `null` is `None`.
fn epoch_time(
    at: &Location,
    field: &str,
    v: Option<&JsonValue<'_>>,
) -> Result<Option<SourceTime>, InputError> {
    match v {
        None | Some(JsonValue::Null) => Ok(None),
        Some(JsonValue::Number(n)) => {
            let secs = n.as_f64().unwrap_or(f64::NAN);
            // ±10^11 s is beyond year 5000 either way.
            if !secs.is_finite() || secs.abs() > 1e11 {
                return Err(InputError::field(
                    at,
                    field,
                    format!("`{n}` is not a time in epoch seconds"),
                ));
            }
            #[allow(clippy::cast_possible_truncation)]
            let ms = (secs * 1000.0).round() as i64;
            Ok(Some(SourceTime::utc_without_offset(ms)))
        }
        Some(other) => Err(InputError::field(
            at,
            field,
            format!(
                "expected epoch seconds (a number), found {}",
                other.type_name()
            ),
        )),
    }
}

/// The text of a message's `content`, or `None` when its type holds
/// nothing kept (model reasoning, memory and instruction contexts, or an
/// unknown type without text).
fn content_text(
    at: &Location,
    field: &str,
    content: Option<&JsonValue<'_>>,
) -> Result<Option<String>, InputError> {
    let Some(content) = content else {
        return Ok(Some(String::new()));
    };
    let JsonValue::Object(_) = content else {
        return Err(InputError::field(
            at,
            field,
            format!("expected an object, found {}", content.type_name()),
        ));
    };
    let obj = content;
    let kind = match obj.get("content_type") {
        Some(JsonValue::String(s)) => s.as_ref(),
        None => {
            return Err(InputError::field(
                at,
                &format!("{field}.content_type"),
                "missing",
            ));
        }
        Some(other) => {
            return Err(InputError::field(
                at,
                &format!("{field}.content_type"),
                format!("expected a string, found {}", other.type_name()),
            ));
        }
    };
    let string = |key: &str| match obj.get(key) {
        Some(JsonValue::String(s)) => Some(s.as_ref().to_owned()),
        _ => None,
    };
    match kind {
        "text" | "multimodal_text" => {
            let parts = match obj.get("parts") {
                None | Some(JsonValue::Null) => return Ok(Some(String::new())),
                Some(JsonValue::Array(parts)) => parts,
                Some(other) => {
                    return Err(InputError::field(
                        at,
                        &format!("{field}.parts"),
                        format!("expected a list, found {}", other.type_name()),
                    ));
                }
            };
            let texts: Vec<String> = parts.iter().filter_map(part_text).collect();
            Ok(Some(texts.join("\n")))
        }
        "code" | "execution_output" | "system_error" | "tether_quote" => {
            Ok(Some(string("text").unwrap_or_default()))
        }
        "tether_browsing_display" => Ok(Some(
            string("result")
                .filter(|s| !s.is_empty())
                .or_else(|| string("summary"))
                .unwrap_or_default(),
        )),
        "thoughts" | "reasoning_recap" | "user_editable_context" | "model_editable_context" => {
            Ok(None)
        }
        // A type this reader does not know: its text, if it has one.
        _ => Ok(string("text")),
    }
}

/// A part of `parts`: a string as is, an image as `[image: pointer]`, an
/// audio transcription as its text, any other asset as `[file: pointer]`.
fn part_text(part: &JsonValue<'_>) -> Option<String> {
    match part {
        JsonValue::String(s) => (!s.is_empty()).then(|| s.as_ref().to_owned()),
        obj @ JsonValue::Object(_) => {
            let kind = obj
                .get("content_type")
                .and_then(JsonValue::as_str)
                .unwrap_or("");
            let pointer = obj.get("asset_pointer").and_then(JsonValue::as_str);
            match (kind, pointer) {
                ("audio_transcription", _) => obj
                    .get("text")
                    .and_then(JsonValue::as_str)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned),
                ("image_asset_pointer", Some(p)) => Some(format!("[image: {p}]")),
                (k, Some(p)) if k.contains("audio") => Some(format!("[audio: {p}]")),
                (_, Some(p)) => Some(format!("[file: {p}]")),
                _ => obj
                    .get("text")
                    .and_then(JsonValue::as_str)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned),
            }
        }
        _ => None,
    }
}
