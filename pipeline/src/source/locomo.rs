//! The LoCoMo conversation format.
//!
//! Two layouts are accepted:
//! - the published `locomo10.json`: a list of samples, each
//!   `{"sample_id", "conversation": {...}, ...}` (a single such object too);
//! - one conversation per file (as in `shared/data/locomo/conv-26.json`): the
//!   conversation object itself, `{"speaker_a", "speaker_b",
//!   "session_1_date_time", "session_1": [...], ...}`.
//!
//! Each conversation is one thread named by its `sample_id`, or by the file
//! stem when it has none. `speaker_a` is the user and `speaker_b` the
//! assistant; `dia_id` is the external id; the session's date and time (no
//! time zone in the data, so read as UTC with the offset unknown) is the
//! source time of each of its messages; sessions are taken in numeric order
//! and messages in file order. An image's `blip_caption` is kept in the
//! content as ` [image: …]`.

use std::path::Path;

use chrono::NaiveDateTime;
use serde_json::{Map, Value};
use strataflow_log::SourceTime;
use strataflow_log::record::Role;

use super::{
    InputError, Location, MessageInput, Rejected, SourceError, SourceItem, canonical_json,
    check_name,
};

/// The format of LoCoMo session times, e.g. `1:56 pm on 8 May, 2023`.
pub const SESSION_TIME_FORMAT: &str = "%I:%M %p on %d %B, %Y";

/// Reads every message of a LoCoMo file, in order. Problems with single
/// messages come back as rejected items; a file that is not LoCoMo at all is
/// a [`SourceError`].
pub fn read(path: &Path, tenant: &str) -> Result<Vec<SourceItem>, SourceError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| SourceError::Io {
        file: file.clone(),
        source,
    })?;
    // default: a path without a file name gives thread names without a stem.
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    parse(&file, &stem, &text, tenant)
}

/// Parses LoCoMo JSON text; `file` names it in errors and `stem` names a
/// conversation without a `sample_id`.
pub fn parse(
    file: &str,
    stem: &str,
    text: &str,
    tenant: &str,
) -> Result<Vec<SourceItem>, SourceError> {
    let top = Location {
        file: file.to_owned(),
        line: None,
        path: None,
    };
    // A byte order mark (written by some Windows tools) is not JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value = serde_json::from_str(text)
        .map_err(|e| SourceError::Format(InputError::item(&top, format!("malformed JSON: {e}"))))?;
    let samples: Vec<(String, &Map<String, Value>)> = match &value {
        Value::Array(samples) => samples
            .iter()
            .enumerate()
            .map(|(i, s)| sample(&top, &format!("[{i}]"), s))
            .collect::<Result<_, _>>()?,
        Value::Object(obj) if obj.contains_key("conversation") => {
            vec![sample(&top, "", &value)?]
        }
        Value::Object(obj) if obj.contains_key("speaker_a") => {
            let thread = match obj.get("sample_id") {
                Some(Value::String(id)) => id.clone(),
                _ => stem.to_owned(),
            };
            vec![(thread, obj)]
        }
        _ => {
            return Err(SourceError::Format(InputError::item(
                &top,
                "not LoCoMo: expected a list of samples, a sample with `conversation`, or a conversation with `speaker_a`",
            )));
        }
    };
    let mut items = Vec::new();
    for (thread, conversation) in samples {
        read_conversation(&top, tenant, &thread, conversation, &mut items)?;
    }
    Ok(items)
}

fn sample<'a>(
    top: &Location,
    path: &str,
    value: &'a Value,
) -> Result<(String, &'a Map<String, Value>), SourceError> {
    let at = Location {
        path: (!path.is_empty()).then(|| path.to_owned()),
        ..top.clone()
    };
    let format =
        |field: &str, problem: &str| SourceError::Format(InputError::field(&at, field, problem));
    let Value::Object(obj) = value else {
        return Err(SourceError::Format(InputError::item(
            &at,
            "expected a sample object",
        )));
    };
    let thread = match obj.get("sample_id") {
        Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(format("sample_id", "missing or not a non-empty string")),
    };
    match obj.get("conversation") {
        Some(Value::Object(c)) => Ok((thread, c)),
        _ => Err(format("conversation", "missing or not an object")),
    }
}

fn read_conversation(
    top: &Location,
    tenant: &str,
    thread: &str,
    conversation: &Map<String, Value>,
    items: &mut Vec<SourceItem>,
) -> Result<(), SourceError> {
    let at = Location {
        path: Some(format!("sample {thread}")),
        ..top.clone()
    };
    let format = |e: InputError| SourceError::Format(e);
    check_name(&at, "sample_id", thread, false).map_err(format)?;
    check_name(&at, "tenant", tenant, true).map_err(format)?;
    let speaker = |key: &str| match conversation.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        _ => Err(SourceError::Format(InputError::field(
            &at,
            key,
            "missing or not a non-empty string",
        ))),
    };
    let user = speaker("speaker_a")?;
    let assistant = speaker("speaker_b")?;

    // `session_N` keys (N all digits) hold messages; `session_N_date_time`
    // and other keys are not sessions. A session number that does not fit
    // refuses the file, naming the key: its messages are never skipped.
    let mut sessions: Vec<(u32, &Vec<Value>)> = Vec::new();
    for (key, v) in conversation {
        let Some(digits) = key
            .strip_prefix("session_")
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Value::Array(messages) = v else {
            continue;
        };
        let n = digits.parse::<u32>().map_err(|_| {
            SourceError::Format(InputError::field(
                &at,
                key,
                format!(
                    "session number {digits} is too large (at most {})",
                    u32::MAX
                ),
            ))
        })?;
        sessions.push((n, messages));
    }
    sessions.sort_by_key(|(n, _)| *n);

    for (n, messages) in sessions {
        let date_key = format!("session_{n}_date_time");
        let date = match conversation.get(&date_key) {
            Some(Value::String(s)) => NaiveDateTime::parse_from_str(s.trim(), SESSION_TIME_FORMAT)
                .map(|t| SourceTime::utc_without_offset(t.and_utc().timestamp_millis()))
                .map_err(|e| format!("`{s}` is not a time like `1:56 pm on 8 May, 2023`: {e}")),
            Some(_) => Err("expected a string".to_owned()),
            None => Err("missing".to_owned()),
        };
        for (i, message) in messages.iter().enumerate() {
            let at = Location {
                path: Some(format!("sample {thread}, session_{n}[{i}]")),
                ..top.clone()
            };
            let item = date
                .as_ref()
                .map_err(|problem| InputError::field(&at, &date_key, problem.clone()))
                .and_then(|time| {
                    read_message(&at, tenant, thread, &user, &assistant, *time, message)
                })
                .map_err(|error| Rejected {
                    error,
                    input: canonical_json(message),
                });
            items.push(item);
        }
    }
    Ok(())
}

fn read_message(
    at: &Location,
    tenant: &str,
    thread: &str,
    user: &str,
    assistant: &str,
    time: SourceTime,
    message: &Value,
) -> Result<MessageInput, InputError> {
    let Value::Object(obj) = message else {
        return Err(InputError::item(at, "expected a message object"));
    };
    let string = |key: &str| match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(InputError::field(at, key, "expected a string")),
        None => Err(InputError::field(at, key, "missing")),
    };
    let speaker = string("speaker")?;
    let role = if speaker == user {
        Role::User
    } else if speaker == assistant {
        Role::Assistant
    } else {
        return Err(InputError::field(
            at,
            "speaker",
            format!("`{speaker}` is neither speaker_a (`{user}`) nor speaker_b (`{assistant}`)"),
        ));
    };
    let external_id = string("dia_id")?;
    check_name(at, "dia_id", &external_id, false)?;
    let mut content = string("text")?;
    if let Some(Value::String(caption)) = obj.get("blip_caption") {
        let caption = caption.trim();
        if !caption.is_empty() {
            if !content.is_empty() {
                content.push(' ');
            }
            content.push_str(&format!("[image: {caption}]"));
        }
    }
    Ok(MessageInput {
        location: at.clone(),
        tenant: tenant.to_owned(),
        thread: thread.to_owned(),
        external_id,
        role,
        speaker: Some(speaker),
        content,
        tool_calls: Vec::new(),
        time,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    const ONE: &str = r#"{"speaker_a":"Ann","speaker_b":"Bo",
      "session_2_date_time":"4:10 pm on 26 October, 2023",
      "session_2":[{"speaker":"Ann","dia_id":"D2:1","text":"later"}],
      "session_1_date_time":"1:56 pm on 8 May, 2023",
      "session_1":[{"speaker":"Ann","dia_id":"D1:1","text":"hi"},
                   {"speaker":"Bo","dia_id":"D1:2","text":"look","blip_caption":"a dog"}],
      "session_3_date_time":"1:00 pm on 1 November, 2023"}"#;

    fn ok(items: Vec<SourceItem>) -> Vec<MessageInput> {
        items.into_iter().map(|i| i.unwrap()).collect()
    }

    #[test]
    fn one_conversation_layout_uses_the_file_stem_and_session_order() {
        let m = ok(parse("conv-9.json", "conv-9", ONE, "").unwrap());
        let ids: Vec<_> = m.iter().map(|m| m.external_id.as_str()).collect();
        assert_eq!(ids, ["D1:1", "D1:2", "D2:1"]);
        assert!(m.iter().all(|m| m.thread == "conv-9"));
        assert_eq!(m[0].role, Role::User);
        assert_eq!(m[1].role, Role::Assistant);
        assert_eq!(m[1].content, "look [image: a dog]");
        assert_eq!(m[0].time.to_rfc3339(), "2023-05-08T13:56:00.000Z");
        assert_eq!(m[0].time.offset_minutes, None);
    }

    #[test]
    fn published_layout_names_threads_by_sample_id() {
        let text = format!(
            r#"[{{"sample_id":"conv-1","conversation":{ONE}}},{{"sample_id":"conv-2","conversation":{ONE}}}]"#
        );
        let m = ok(parse("locomo10.json", "locomo10", &text, "t").unwrap());
        assert_eq!(m.len(), 6);
        assert_eq!(m[0].thread, "conv-1");
        assert_eq!(m[5].thread, "conv-2");
        assert_eq!(m[0].tenant, "t");
    }

    #[test]
    fn a_bad_message_is_rejected_with_its_place() {
        let text = ONE.replace(r#""speaker":"Bo""#, r#""speaker":"Cy""#);
        let items = parse("c.json", "c", &text, "").unwrap();
        let err = items[1].as_ref().unwrap_err();
        assert_eq!(err.error.field.as_deref(), Some("speaker"));
        assert_eq!(
            err.error.to_string().split(": field").next(),
            Some("c.json: sample c, session_1[1]")
        );
        assert!(items[0].is_ok() && items[2].is_ok());
    }

    #[test]
    fn an_unparsable_session_time_rejects_its_messages() {
        let text = ONE.replace("4:10 pm on 26 October, 2023", "sometime");
        let items = parse("c.json", "c", &text, "").unwrap();
        let err = items[2].as_ref().unwrap_err();
        assert_eq!(err.error.field.as_deref(), Some("session_2_date_time"));
    }

    #[test]
    fn a_file_that_is_not_locomo_is_refused_whole() {
        assert!(parse("x.json", "x", "[1]", "").is_err());
        assert!(parse("x.json", "x", r#"{"a":1}"#, "").is_err());
        assert!(parse("x.json", "x", "{", "").is_err());
    }
}
