//! What the model-backed operators send: the system prompt (a file under
//! `operators/prompts/`), a user turn rendered from the input, the tool the
//! model must call, and the configuration hash that covers all three.
//!
//! The user turn lists messages and events as JSON lines (one object per
//! line, fields in a fixed order), so content with newlines or brackets
//! cannot be mistaken for structure. Each line carries a short ref (`m1`,
//! `e1`, …) that the answer cites instead of a 64-digit record id; the
//! operator maps refs back to ids ([`Refs`]).

use strataflow_record::record::{Message, Role};
use strataflow_record::{Digest, RecordId};

use crate::extractor::heuristic::speaker_name;
use crate::model::{ChatMessage, ModelRequest, ToolSpec};
use crate::operator::{BlockInput, OperatorId, config_hash};
use crate::text::clip;

/// Longest message content shown to a model, in characters; longer content
/// is cut (the cut part cannot be quoted).
pub const MAX_MESSAGE_CHARS: usize = 8000;

/// Short refs (`m1`, `e2`, …) for record ids, in the order shown.
#[derive(Clone, Debug)]
pub struct Refs {
    prefix: char,
    ids: Vec<RecordId>,
}

impl Refs {
    /// Refs `{prefix}1…{prefix}N` for `ids`, in order.
    pub fn new(prefix: char, ids: Vec<RecordId>) -> Self {
        Self { prefix, ids }
    }

    /// The ref of the `index`-th id (0-based).
    pub fn name(&self, index: usize) -> String {
        format!("{}{}", self.prefix, index + 1)
    }

    /// The position of `reference` (`m3` → 2), if it names one of the ids.
    pub fn position(&self, reference: &str) -> Option<usize> {
        let n: usize = reference.trim().strip_prefix(self.prefix)?.parse().ok()?;
        (1..=self.ids.len()).contains(&n).then(|| n - 1)
    }

    /// The record id of `reference`, if it names one.
    pub fn resolve(&self, reference: &str) -> Option<RecordId> {
        self.position(reference)
            .and_then(|i| self.ids.get(i).copied())
    }

    /// How many refs there are.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// The messages of a block a model sees: every message but system ones (a
/// system prompt is not conversation), numbered `m1…` in block order.
pub fn shown_messages<'a>(block: &BlockInput<'a>) -> Vec<(RecordId, &'a Message)> {
    block
        .messages
        .iter()
        .filter(|(_, m)| m.role != Role::System)
        .map(|(id, m)| (*id, m))
        .collect()
}

/// One message as a JSON line.
#[derive(serde::Serialize)]
struct MessageLine<'a> {
    r#ref: &'a str,
    speaker: String,
    role: &'static str,
    time: String,
    content: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<&'a str>,
}

/// The shown messages as JSON lines with their refs, and the refs.
pub fn render_messages(shown: &[(RecordId, &Message)]) -> (String, Refs) {
    let refs = Refs::new('m', shown.iter().map(|(id, _)| *id).collect());
    let mut out = String::new();
    for (i, (_, m)) in shown.iter().enumerate() {
        let name = refs.name(i);
        let line = MessageLine {
            r#ref: &name,
            speaker: speaker_name(m),
            role: m.role.as_str(),
            time: m.time.to_rfc3339(),
            content: clip(&m.content, MAX_MESSAGE_CHARS),
            tools: m.tool_calls.iter().map(|t| t.name.as_str()).collect(),
        };
        push_json_line(&mut out, &line);
    }
    (out, refs)
}

/// Appends `value` as one line of compact JSON.
pub fn push_json_line<T: serde::Serialize>(out: &mut String, value: &T) {
    // Serializing these plain structs cannot fail (string keys, no maps
    // with non-string keys); an empty line would only make the request
    // differ, never a record.
    out.push_str(&serde_json::to_string(value).unwrap_or_default());
    out.push('\n');
}

/// The sentence added to the user turn of attempt 2 and later, so that a
/// retry is a different request (a different key) and is not served the
/// recorded answer that was rejected.
pub fn retry_note(attempt: u32, tool: &str) -> Option<String> {
    (attempt > 1).then(|| {
        format!(
            "Attempt {attempt}: an earlier attempt at this request gave no valid answer (for \
             example a missing field, a ref that is not listed, or a time in the wrong form). \
             Call `{tool}` again and follow every rule exactly."
        )
    })
}

/// Sampling temperature of every model-backed operator.
pub const TEMPERATURE: f32 = 0.0;

/// A request: system prompt, user turn, forced tool.
pub fn request(
    operator: OperatorId,
    model: &str,
    system: &str,
    user: String,
    tool: ToolSpec,
    max_tokens: u32,
) -> ModelRequest {
    ModelRequest {
        operator,
        model: model.to_owned(),
        messages: vec![
            ChatMessage {
                role: "system".into(),
                content: system.to_owned(),
            },
            ChatMessage {
                role: "user".into(),
                content: user,
            },
        ],
        tool,
        temperature: TEMPERATURE,
        max_tokens,
    }
}

/// The configuration hash of a model-backed operator: over the model name,
/// the blake3 hash of its prompt text, its tool (name, description,
/// schema), its output cap and the longest message it shows. Changing any
/// of them makes a new configuration, hence new derivations.
pub fn operator_config_hash(
    id: &OperatorId,
    model: &str,
    prompt: &str,
    tool: &ToolSpec,
    max_tokens: u32,
) -> Digest {
    let config = serde_json::json!({
        "model": model,
        "prompt_blake3": blake3::hash(prompt.as_bytes()).to_hex().as_str(),
        "tool": tool,
        "max_tokens": max_tokens,
        "max_message_chars": MAX_MESSAGE_CHARS,
        "temperature_milli": 0,
    });
    config_hash(id, &config.to_string())
}

/// Approximate input tokens of a request: a quarter of the characters of
/// its canonical form (system prompt, user turn and tool schema, which are
/// all sent), rounded up.
pub fn estimate_request_tokens(request: &ModelRequest) -> u64 {
    let chars = request.canonical().chars().count() as u64;
    chars.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_resolve_only_listed_names() {
        let refs = Refs::new('m', vec![RecordId([1; 32]), RecordId([2; 32])]);
        assert_eq!(refs.name(1), "m2");
        assert_eq!(refs.resolve("m2"), Some(RecordId([2; 32])));
        assert_eq!(refs.resolve(" m1 "), Some(RecordId([1; 32])));
        for bad in ["m0", "m3", "e1", "m", "1", "m-1", "m1x"] {
            assert_eq!(refs.resolve(bad), None, "{bad}");
        }
    }

    #[test]
    fn retry_note_only_after_the_first_attempt() {
        assert_eq!(retry_note(1, "f"), None);
        let note = retry_note(2, "f").unwrap_or_default();
        assert!(note.starts_with("Attempt 2:"), "{note}");
        assert_ne!(retry_note(2, "f"), retry_note(3, "f"));
    }
}
