//! The contract between model-backed operators and whatever answers their
//! requests.
//!
//! A model-backed operator stays a pure function: it turns its input into a
//! [`ModelRequest`], hands it to a [`ModelGateway`], and turns the reply
//! into records. The gateway is the only thing that may touch the network;
//! the pipeline's gateway serves any request whose response is already a
//! `ModelCall` record from the log, so a replay reproduces the operator's
//! output byte for byte without a call.
//!
//! A request is canonical: the same input gives the same request bytes
//! ([`ModelRequest::canonical`]), and its key
//! ([`ModelRequest::key`]) is the hash of operator id, model and those
//! bytes. Secrets (API keys, base URLs) are never part of a request.

use strataflow_log::{Digest, RecordId};

use crate::operator::{OperatorError, OperatorId};

/// A structured-output tool the model must call: its arguments are the
/// operator's answer.
#[derive(Clone, PartialEq, Debug, serde::Serialize)]
pub struct ToolSpec {
    /// Function name, e.g. `record_events`.
    pub name: String,
    /// What the function is for.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One chat message of a request.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct ChatMessage {
    /// `system` or `user`.
    pub role: String,
    /// Text.
    pub content: String,
}

/// A model request, as an operator builds it.
#[derive(Clone, PartialEq, Debug, serde::Serialize)]
pub struct ModelRequest {
    /// The operator asking (part of the key; not sent to the model).
    #[serde(skip)]
    pub operator: OperatorId,
    /// Model name (part of the key and of the body).
    pub model: String,
    /// The conversation: system prompt then the user turn.
    pub messages: Vec<ChatMessage>,
    /// The function the model must call with its answer.
    pub tool: ToolSpec,
    /// Sampling temperature (0 for extraction).
    pub temperature: f32,
    /// Most output tokens.
    pub max_tokens: u32,
}

impl ModelRequest {
    /// The request's canonical JSON: fields in declaration order, the
    /// schema's object keys sorted (serde_json keeps maps sorted), no
    /// whitespace. Stored in the `ModelCall` record.
    pub fn canonical(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The lookup key: blake3 (key-derivation mode, context
    /// `strataflow model call v1`) over operator id, model and the
    /// canonical request, each followed by a zero byte.
    pub fn key(&self) -> Digest {
        let mut h = blake3::Hasher::new_derive_key("strataflow model call v1");
        h.update(self.operator.to_string().as_bytes());
        h.update(&[0]);
        h.update(self.model.as_bytes());
        h.update(&[0]);
        h.update(self.canonical().as_bytes());
        h.update(&[0]);
        RecordId(*h.finalize().as_bytes())
    }
}

/// What the model answered.
#[derive(Clone, PartialEq, Debug)]
pub struct ModelReply {
    /// The tool call's arguments (or JSON found in the text when the model
    /// did not call the tool), parsed but not yet validated against the
    /// operator's contract.
    pub arguments: serde_json::Value,
    /// Whether the reply was served from a recorded `ModelCall` (no
    /// request was made).
    pub from_log: bool,
}

/// Why a gateway could not answer.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ModelError {
    /// Offline mode and the request is not recorded. Stops the job; nothing
    /// is written.
    #[error(
        "offline: no recorded model call for {operator} on {subject}; run without --offline to make it"
    )]
    Offline {
        /// Operator id.
        operator: String,
        /// What the request was about (e.g. `block 3f2a… of thread t1`).
        subject: String,
    },
    /// The model service failed after all retries (HTTP status, timeout,
    /// connection). The operator run fails and is retried later.
    #[error("model service: {0}")]
    Unavailable(String),
    /// The model service cannot be reached at all (connection refused, no
    /// such host): every other request would fail the same way, so the job
    /// stops at the first one instead of failing every block. Nothing of
    /// the halted run is recorded; a later run derives it.
    #[error(
        "model service at {endpoint} is unreachable ({detail}); stopped, nothing of the halted run was recorded: run it again once the service answers"
    )]
    Unreachable {
        /// The URL requested (never with credentials).
        endpoint: String,
        /// What failed (e.g. `connection refused`).
        detail: String,
    },
    /// The response was not usable (no tool call and no JSON in the text,
    /// or arguments that are not JSON). The run fails; a later attempt
    /// asks again.
    #[error("model output: {0}")]
    Malformed(String),
    /// The gateway is misconfigured (no model, no API key variable set).
    /// Stops the job.
    #[error("model configuration: {0}")]
    Config(String),
}

impl ModelError {
    /// Whether the job must stop (nothing recorded) rather than record a
    /// failed derivation and go on.
    pub fn halts(&self) -> bool {
        matches!(
            self,
            Self::Offline { .. } | Self::Config(_) | Self::Unreachable { .. }
        )
    }
}

/// A gateway error as an operator's: a halt stops the job, anything else
/// is a failed run, recorded and retried.
impl From<ModelError> for OperatorError {
    fn from(e: ModelError) -> Self {
        if e.halts() {
            Self::Halted(e.to_string())
        } else {
            Self::Failed(e.to_string())
        }
    }
}

/// Answers model requests. Implementations: the pipeline's recording
/// gateway (log first, then HTTP), and test doubles.
pub trait ModelGateway: Send + Sync {
    /// Answers `request`; `subject` names what it is about for errors
    /// (block id and thread).
    fn complete(&self, request: &ModelRequest, subject: &str) -> Result<ModelReply, ModelError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(model: &str, text: &str) -> ModelRequest {
        ModelRequest {
            operator: OperatorId::new("llm-extractor", 1),
            model: model.into(),
            messages: vec![ChatMessage {
                role: "user".into(),
                content: text.into(),
            }],
            tool: ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: serde_json::json!({"type": "object", "properties": {"b": {}, "a": {}}}),
            },
            temperature: 0.0,
            max_tokens: 100,
        }
    }

    #[test]
    fn key_depends_on_operator_model_and_request() {
        let a = request("m", "x");
        assert_eq!(a.key(), request("m", "x").key());
        assert_ne!(a.key(), request("n", "x").key());
        assert_ne!(a.key(), request("m", "y").key());
        let mut other = request("m", "x");
        other.operator = OperatorId::new("llm-extractor", 2);
        assert_ne!(a.key(), other.key());
    }

    #[test]
    fn canonical_form_is_compact_with_sorted_schema_keys() {
        let text = request("m", "x").canonical();
        assert!(!text.contains(' ') || text.contains("\"content\":\"x\""));
        let a = text.find("\"a\"").unwrap_or(usize::MAX);
        let b = text.find("\"b\"").unwrap_or(0);
        assert!(a < b, "{text}");
        assert!(
            !text.contains("llm-extractor"),
            "operator is not sent: {text}"
        );
    }
}
