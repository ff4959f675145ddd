//! `Message`: one raw conversation message (layer L5), exactly as ingested.

use rkyv::{Archive, Deserialize, Serialize};

use crate::time::SourceTime;

/// Who wrote a message.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human side; each user message starts a turn.
    User,
    /// The agent's reply.
    Assistant,
    /// A tool's output.
    Tool,
    /// A system prompt or notice; never rendered in L4/L3.
    System,
}

impl Role {
    /// Parses the lowercase names used by the JSONL format.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "user" => Some(Self::User),
            "assistant" => Some(Self::Assistant),
            "tool" => Some(Self::Tool),
            "system" => Some(Self::System),
            _ => None,
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
            Self::System => "system",
        }
    }

    /// The label used in rendered transcripts (`User`, `Assistant`, …).
    pub fn label(self) -> &'static str {
        match self {
            Self::User => "User",
            Self::Assistant => "Assistant",
            Self::Tool => "Tool",
            Self::System => "System",
        }
    }
}

/// A tool call attached to a message. `arguments` and `result` hold canonical
/// JSON text (object keys sorted, no insignificant whitespace) when present.
#[derive(Archive, Serialize, Deserialize, Clone, PartialEq, Eq, Hash, Debug)]
#[rkyv(derive(Debug))]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// The call's arguments as canonical JSON.
    pub arguments: Option<String>,
    /// The call's result as canonical JSON.
    pub result: Option<String>,
}

impl serde::Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // default: text that is not JSON is written as a JSON string.
        let json = |text: &Option<String>| {
            text.as_deref()
                .map(|t| serde_json::from_str::<serde_json::Value>(t).unwrap_or_else(|_| t.into()))
        };
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("arguments", &json(&self.arguments))?;
        map.serialize_entry("result", &json(&self.result))?;
        map.end()
    }
}

/// One raw message (L5). Its id covers every field, so the same message
/// ingested twice is the same record.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct Message {
    /// Tenant ("" when the application has none).
    pub tenant: String,
    /// Conversation thread.
    pub thread: String,
    /// The source's id for the message, unique within its thread.
    pub external_id: String,
    /// 0-based position in the thread, assigned in arrival order.
    pub position: u64,
    /// Who wrote it.
    pub role: Role,
    /// Display name of the speaker, when the source gives one.
    pub speaker: Option<String>,
    /// The text, verbatim (never trimmed).
    pub content: String,
    /// Tool calls made in this message.
    pub tool_calls: Vec<ToolCall>,
    /// When the source says it was written.
    pub time: SourceTime,
}
