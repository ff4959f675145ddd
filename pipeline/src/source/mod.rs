//! Sources: readers that turn input files into [`MessageInput`]s, with the
//! exact location of every problem.

pub mod chat_jsonl;
pub mod chatgpt;
pub mod claude;
pub mod export;
pub mod json_array;
mod json_value;
pub mod jsonl;
pub mod locomo;
mod spool;

use std::fmt;

use strataflow_log::SourceTime;
use strataflow_log::record::{Message, Role, ToolCall};

/// Where an input item is: a file and a line, or a file and a path inside
/// one JSON document.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct Location {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line (line-oriented inputs).
    pub line: Option<usize>,
    /// Path inside a JSON document (document inputs).
    pub path: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(path) = &self.path {
            write!(f, ": {path}")?;
        }
        Ok(())
    }
}

/// A rejected input item: where, which field, what is wrong.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, serde::Serialize)]
#[error("{location}: {}{problem}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct InputError {
    /// Where.
    pub location: Location,
    /// The offending field, when one is to blame.
    pub field: Option<String>,
    /// What is wrong.
    pub problem: String,
}

impl InputError {
    /// An error about one field.
    pub fn field(location: &Location, field: &str, problem: impl Into<String>) -> Self {
        Self {
            location: location.clone(),
            field: Some(field.to_owned()),
            problem: problem.into(),
        }
    }

    /// An error about the whole item.
    pub fn item(location: &Location, problem: impl Into<String>) -> Self {
        Self {
            location: location.clone(),
            field: None,
            problem: problem.into(),
        }
    }
}

/// A message read from a source, before the log gives it a position.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MessageInput {
    /// Where it was read.
    pub location: Location,
    /// Tenant.
    pub tenant: String,
    /// Thread.
    pub thread: String,
    /// External id, unique in its thread.
    pub external_id: String,
    /// Role.
    pub role: Role,
    /// Speaker name.
    pub speaker: Option<String>,
    /// Verbatim text.
    pub content: String,
    /// Tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// Source time.
    pub time: SourceTime,
}

impl MessageInput {
    /// The record this input becomes at `position` in its thread.
    pub fn to_message(&self, position: u64) -> Message {
        Message {
            tenant: self.tenant.clone(),
            thread: self.thread.clone(),
            external_id: self.external_id.clone(),
            position,
            role: self.role,
            speaker: self.speaker.clone(),
            content: self.content.clone(),
            tool_calls: self.tool_calls.clone(),
            time: self.time,
        }
    }

    /// [`MessageInput::to_message`], the input's text moved, not copied.
    pub fn into_message(self, position: u64) -> Message {
        Message {
            tenant: self.tenant,
            thread: self.thread,
            external_id: self.external_id,
            position,
            role: self.role,
            speaker: self.speaker,
            content: self.content,
            tool_calls: self.tool_calls,
            time: self.time,
        }
    }

    /// The input in the JSONL message format, as canonical JSON (for
    /// rejects files).
    pub fn to_json(&self) -> String {
        let tool_calls: Vec<serde_json::Value> = self
            .tool_calls
            .iter()
            .map(|c| {
                // default: tool-call text that is not JSON is shown as null.
                let parse = |t: &Option<String>| {
                    t.as_deref()
                        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                        .unwrap_or(serde_json::Value::Null)
                };
                serde_json::json!({"name": c.name, "arguments": parse(&c.arguments), "result": parse(&c.result)})
            })
            .collect();
        canonical_json(&serde_json::json!({
            "tenant": self.tenant,
            "thread": self.thread,
            "id": self.external_id,
            "role": self.role.as_str(),
            "speaker": self.speaker,
            "content": self.content,
            "ts": self.time.to_rfc3339(),
            "tool_calls": tool_calls,
        }))
    }

    /// Whether a stored message holds the same content as this input
    /// (everything but the position).
    pub fn same_content_as(&self, m: &Message) -> bool {
        self.tenant == m.tenant
            && self.thread == m.thread
            && self.external_id == m.external_id
            && self.role == m.role
            && self.speaker == m.speaker
            && self.content == m.content
            && self.tool_calls == m.tool_calls
            && self.time == m.time
    }
}

/// Canonical JSON text (moved to the log crate, which model-call keys
/// share; re-exported here for the sources).
pub use strataflow_log::json::canonical_json;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_display_names_file_line_and_path() {
        let at = Location {
            file: "a.jsonl".into(),
            line: Some(7),
            path: None,
        };
        let e = InputError::field(&at, "ts", "not a time");
        assert_eq!(e.to_string(), "a.jsonl:7: field `ts`: not a time");
        let at = Location {
            file: "c.json".into(),
            line: None,
            path: Some("session_2[3]".into()),
        };
        assert_eq!(
            InputError::item(&at, "bad").to_string(),
            "c.json: session_2[3]: bad"
        );
    }
}

/// Error reading a source: an I/O failure stops the job; an input error
/// rejects one item (or the whole batch, unless quarantined).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The file could not be read.
    #[error("cannot read {file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not in the expected format at all.
    #[error("{0}")]
    Format(InputError),
}

/// One item read from a source: a message, or the reason it was rejected
/// together with the item's original text.
pub type SourceItem = Result<MessageInput, Rejected>;

/// A rejected item.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Rejected {
    /// Why.
    pub error: InputError,
    /// The item as it appeared in the input.
    pub input: String,
}

pub use strataflow_log::MAX_NAME_BYTES;

/// Checks a tenant, thread or id for length and emptiness.
pub(crate) fn check_name(
    location: &Location,
    field: &str,
    value: &str,
    allow_empty: bool,
) -> Result<(), InputError> {
    if !allow_empty && value.trim().is_empty() {
        return Err(InputError::field(location, field, "must not be empty"));
    }
    if value.len() > MAX_NAME_BYTES {
        return Err(InputError::field(
            location,
            field,
            format!("is {} bytes; the limit is {MAX_NAME_BYTES}", value.len()),
        ));
    }
    Ok(())
}
