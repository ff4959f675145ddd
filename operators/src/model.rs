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

use strataflow_record::json::write_canonical_json;
use strataflow_record::{Digest, RecordId};

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
    /// schema's object keys sorted by their UTF-8 bytes (through
    /// [`canonical_json`](strataflow_record::json::canonical_json), so the bytes
    /// do not depend on serde_json's `preserve_order` feature), no whitespace. Stored in the `ModelCall`
    /// record; [`ModelRequest::key`] hashes it.
    pub fn canonical(&self) -> String {
        let mut out = String::from("{\"model\":");
        push_json_str(&mut out, &self.model);
        out.push_str(",\"messages\":[");
        for (i, m) in self.messages.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"role\":");
            push_json_str(&mut out, &m.role);
            out.push_str(",\"content\":");
            push_json_str(&mut out, &m.content);
            out.push('}');
        }
        out.push_str("],\"tool\":{\"name\":");
        push_json_str(&mut out, &self.tool.name);
        out.push_str(",\"description\":");
        push_json_str(&mut out, &self.tool.description);
        out.push_str(",\"parameters\":");
        write_canonical_json(&self.tool.parameters, &mut out);
        out.push_str("},\"temperature\":");
        // serde_json prints an `f32` with the shortest digits of the `f32`
        // (0.2, not 0.20000000298023224) and a non-finite one as `null`.
        #[expect(
            clippy::expect_used,
            reason = "serde_json writes any f32 (a non-finite one as null)"
        )]
        let temperature = serde_json::to_string(&self.temperature).expect("an f32 serializes");
        out.push_str(&temperature);
        out.push_str(",\"max_tokens\":");
        out.push_str(&self.max_tokens.to_string());
        out.push('}');
        out
    }

    /// The lookup key: blake3 (key-derivation mode, context
    /// `strataflow model call v1`) over operator id, model and the
    /// canonical request, each followed by a zero byte.
    pub fn key(&self) -> Digest {
        model_call_key(&self.operator, &self.model, &self.canonical())
    }
}

/// The key of a recorded model call ([`ModelRequest::key`], and the
/// embedders' requests): blake3 (key-derivation mode, context
/// `strataflow model call v1`) over operator id, model and the canonical
/// request, each followed by a zero byte.
pub fn model_call_key(operator: &OperatorId, model: &str, canonical: &str) -> Digest {
    let mut h = blake3::Hasher::new_derive_key("strataflow model call v1");
    h.update(operator.to_string().as_bytes());
    h.update(&[0]);
    h.update(model.as_bytes());
    h.update(&[0]);
    h.update(canonical.as_bytes());
    h.update(&[0]);
    RecordId(*h.finalize().as_bytes())
}

/// Appends `s` as a JSON string (serde_json's escaping).
fn push_json_str(out: &mut String, s: &str) {
    #[expect(clippy::expect_used, reason = "serde_json writes any &str")]
    let quoted = serde_json::to_string(s).expect("a str serializes");
    out.push_str(&quoted);
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
///
/// The `Display` of a non-halting error is the text of the failed
/// `Derivation` it becomes (through [`OperatorError::Model`]), so it must
/// not change: record ids depend on it.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
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
    #[error("model service: {message}")]
    Unavailable {
        /// The HTTP status of the last attempt, when the service answered.
        status: Option<u16>,
        /// Whether the failure was transient (429, 5xx, a timeout, a
        /// dropped connection, a body that is not a chat completion) and
        /// only the retries ran out: a later run may succeed as it is.
        /// False for a refusal (another 4xx) and for a local failure (the
        /// log, the gateway's runtime), which a retry repeats.
        retryable: bool,
        /// What failed: the status and the clipped body, or the transport
        /// error, never the API key.
        message: String,
    },
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
    #[error("model output: {problem}")]
    Malformed {
        /// The recorded `ModelCall` whose response is unusable (it stays
        /// recorded), when the answer came from one.
        call: Option<RecordId>,
        /// What is wrong with it.
        problem: String,
    },
    /// The log of calls shared with other processes (a cluster's calls
    /// stream, looked up before the model and offered every call made)
    /// did not answer within its retries, or holds something that is not a
    /// call for the request. Stops the job: nothing of the halted run is
    /// recorded, and a later run derives it.
    #[error(
        "model calls of {log}: {detail}; stopped, nothing of the halted run was recorded: run it again once it answers"
    )]
    SharedCalls {
        /// The shared log (e.g. `stream strataflow_calls`).
        log: String,
        /// What failed.
        detail: String,
    },
    /// The gateway is misconfigured (no model, no API key variable set).
    /// Stops the job.
    #[error("model configuration: {problem}")]
    Config {
        /// The setting at fault: [`ModelError::SETTING_BASE_URL`],
        /// [`ModelError::SETTING_API_KEY_ENV`],
        /// [`ModelError::SETTING_CONCURRENCY`], or
        /// [`ModelError::SETTING_RUNTIME`] (the HTTP client or its runtime
        /// could not start, or no service is connected).
        setting: &'static str,
        /// What is wrong.
        problem: String,
    },
}

impl ModelError {
    /// [`ModelError::Config`]'s `setting`: the base URL.
    pub const SETTING_BASE_URL: &'static str = "base_url";
    /// [`ModelError::Config`]'s `setting`: the API key variable.
    pub const SETTING_API_KEY_ENV: &'static str = "api_key_env";
    /// [`ModelError::Config`]'s `setting`: the concurrency limit.
    pub const SETTING_CONCURRENCY: &'static str = "concurrency";
    /// [`ModelError::Config`]'s `setting`: the client, its runtime or the
    /// connection to a service as a whole.
    pub const SETTING_RUNTIME: &'static str = "runtime";

    /// A local failure to answer (the log, the gateway's runtime): not the
    /// service's, and not worth retrying as such.
    pub fn local(message: impl Into<String>) -> Self {
        Self::Unavailable {
            status: None,
            retryable: false,
            message: message.into(),
        }
    }

    /// Whether the job must stop (nothing recorded) rather than record a
    /// failed derivation and go on.
    pub fn halts(&self) -> bool {
        matches!(
            self,
            Self::Offline { .. }
                | Self::Config { .. }
                | Self::Unreachable { .. }
                | Self::SharedCalls { .. }
        )
    }
}

/// A gateway error as an operator's: a halt stops the job, anything else
/// is a failed run, recorded (with the error's text) and retried.
impl From<ModelError> for OperatorError {
    fn from(e: ModelError) -> Self {
        if e.halts() {
            Self::Halted(e)
        } else {
            Self::Model(e)
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
#[allow(clippy::unwrap_used)]
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

    /// A schema whose objects were built in the given key order (a
    /// `serde_json::Map` keeps insertion order when serde_json's
    /// `preserve_order` feature is on).
    fn schema(reversed: bool) -> serde_json::Value {
        let mut props = vec![
            (
                "a",
                serde_json::json!({"description": "first", "type": "string"}),
            ),
            ("b", serde_json::json!({"minimum": 0, "type": "integer"})),
            ("é", serde_json::json!({})),
        ];
        let mut top = vec![
            ("properties", serde_json::Value::Null),
            ("required", serde_json::json!(["b", "a"])),
            ("type", serde_json::json!("object")),
        ];
        if reversed {
            props.reverse();
            top.reverse();
        }
        let props: serde_json::Map<String, serde_json::Value> =
            props.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let mut map = serde_json::Map::new();
        for (k, v) in top {
            let v = if k == "properties" {
                serde_json::Value::Object(props.clone())
            } else {
                v
            };
            map.insert(k.to_owned(), v);
        }
        serde_json::Value::Object(map)
    }

    fn request_with(parameters: serde_json::Value) -> ModelRequest {
        let mut r = request("gpt-test", "Ana said \"hi\"\n");
        r.tool.parameters = parameters;
        r.temperature = 0.2;
        r
    }

    /// Without serde_json's `preserve_order` every `Map` is sorted anyway;
    /// `cargo test -p strataflow-operators --features
    /// serde_json/preserve_order model::` runs this where insertion order
    /// shows (it fails there with a plain `serde_json::to_string`).
    #[test]
    fn key_does_not_depend_on_map_insertion_order() {
        let forward = request_with(schema(false));
        let reversed = request_with(schema(true));
        let parsed = request_with(
            serde_json::from_str(
                r#"{"type":"object","required":["b","a"],"properties":{"é":{},"b":{"minimum":0,"type":"integer"},"a":{"description":"first","type":"string"}}}"#,
            )
            .unwrap(),
        );
        assert_eq!(forward.canonical(), reversed.canonical());
        assert_eq!(forward.canonical(), parsed.canonical());
        assert_eq!(forward.key(), reversed.key());
        assert_eq!(forward.key(), parsed.key());
        // Keys sorted by their bytes at every depth; array order kept.
        assert!(
            forward.canonical().contains(
                r#""parameters":{"properties":{"a":{"description":"first","type":"string"},"b":{"minimum":0,"type":"integer"},"é":{}},"required":["b","a"],"type":"object"}"#
            ),
            "{}",
            forward.canonical()
        );
    }

    /// The bytes and key of one fixed request. A change here means every
    /// recorded model call is missed (the calls would be made again).
    #[test]
    fn golden_canonical_request_and_key() {
        let r = request_with(schema(true));
        assert_eq!(
            r.canonical(),
            concat!(
                r#"{"model":"gpt-test","messages":[{"role":"user","content":"Ana said \"hi\"\n"}],"#,
                r#""tool":{"name":"f","description":"d","parameters":{"properties":{"a":{"description":"first","type":"string"},"b":{"minimum":0,"type":"integer"},"é":{}},"required":["b","a"],"type":"object"}},"#,
                r#""temperature":0.2,"max_tokens":100}"#
            )
        );
        assert_eq!(
            r.key().to_hex(),
            "a76ed650d2665a8ef5c695cb49468704a5f06956356d73b924f86441c0ad0074"
        );
    }

    /// The canonical form is the one serde_json gave before it went through
    /// the canonical encoder (fields in declaration order, sorted maps), so
    /// the keys of recorded calls did not change.
    #[test]
    fn canonical_form_equals_the_serde_encoding_of_sorted_maps() {
        let mut r = request_with(schema(false));
        r.messages.insert(
            0,
            ChatMessage {
                role: "system".into(),
                content: "tabs\t, unicode ✓ and \u{1} control".into(),
            },
        );
        for t in [0.0, 0.2, 1.0, 0.7, f32::NAN] {
            r.temperature = t;
            assert_eq!(r.canonical(), serde_json::to_string(&r).unwrap());
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
