//! `llm-summarizer@1`: L0–L2 and should_extract of a block by a model
//! (spec §5), through the `record_block_summary` tool.
//!
//! The user turn lists the block's messages (system messages left out) as
//! JSON lines with refs `m1…`; the system prompt is
//! `operators/prompts/summarizer.md`. The answer's five fields are all
//! required; the pipeline then applies [`crate::validate::summary`] as for
//! any summarizer.

use std::sync::Arc;

use serde_json::{Value, json};
use strataflow_record::Digest;
use strataflow_record::record::BlockSummary;

use super::answer::Fields;
use super::prompt::{
    estimate_request_tokens, operator_config_hash, render_messages, request, retry_note,
    shown_messages,
};
use crate::model::{ModelGateway, ModelRequest, ToolSpec};
use crate::operator::{BlockInput, OperatorError, OperatorId, Summarizer};

/// The system prompt.
pub const PROMPT: &str = include_str!("../../prompts/summarizer.md");
/// The tool the model must call.
pub const TOOL_NAME: &str = "record_block_summary";
/// Most output tokens.
pub const MAX_TOKENS: u32 = 1024;

/// Its operator id.
pub fn id() -> OperatorId {
    OperatorId::new("llm-summarizer", 1)
}

/// The `record_block_summary` tool and its JSON Schema.
pub fn tool() -> ToolSpec {
    let strings = |max: u32| json!({"type": "array", "items": {"type": "string"}, "maxItems": max});
    ToolSpec {
        name: TOOL_NAME.into(),
        description: "Record the L0-L2 memory layers of the conversation block.".into(),
        parameters: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["title", "tags", "summary", "key_points", "should_extract"],
            "properties": {
                "title": {"type": "string", "description": "At most 120 characters."},
                "tags": strings(12),
                "summary": {"type": "string", "description": "At most 600 characters."},
                "key_points": strings(20),
                "should_extract": {"type": "boolean"},
            },
        }),
    }
}

/// The request for a block with model `model`.
pub fn build_request(model: &str, block: &BlockInput<'_>) -> ModelRequest {
    let (lines, _) = render_messages(&shown_messages(block));
    let mut user = format!("Messages of the block:\n{lines}");
    if let Some(note) = retry_note(block.attempt, TOOL_NAME) {
        user.push('\n');
        user.push_str(&note);
        user.push('\n');
    }
    request(id(), model, PROMPT, user, tool(), MAX_TOKENS)
}

/// Reads an answer into a summary of `block`.
pub fn parse_answer(
    block: &BlockInput<'_>,
    arguments: &Value,
) -> Result<BlockSummary, OperatorError> {
    let f = Fields::of(arguments, "answer")?;
    Ok(BlockSummary {
        tenant: block.block.tenant.clone(),
        block: block.id,
        title: f.string("title")?.to_owned(),
        tags: f.strings("tags")?,
        summary: f.string("summary")?.to_owned(),
        key_points: f.strings("key_points")?,
        should_extract: f.boolean("should_extract")?,
    })
}

/// The model-backed summarizer.
#[derive(Clone)]
pub struct LlmSummarizer {
    gateway: Arc<dyn ModelGateway>,
    model: String,
}

impl std::fmt::Debug for LlmSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSummarizer")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl LlmSummarizer {
    /// A summarizer asking `model` through `gateway`.
    pub fn new(gateway: Arc<dyn ModelGateway>, model: &str) -> Self {
        Self {
            gateway,
            model: model.to_owned(),
        }
    }

    /// The request it makes for `block`.
    pub fn request(&self, block: &BlockInput<'_>) -> ModelRequest {
        build_request(&self.model, block)
    }

    /// Approximate input tokens of that request.
    pub fn estimate_tokens(&self, block: &BlockInput<'_>) -> u64 {
        estimate_request_tokens(&self.request(block))
    }
}

impl Summarizer for LlmSummarizer {
    fn id(&self) -> OperatorId {
        id()
    }

    fn config_hash(&self) -> Digest {
        operator_config_hash(&id(), &self.model, PROMPT, &tool(), MAX_TOKENS)
    }

    fn summarize(&self, block: &BlockInput<'_>) -> Result<BlockSummary, OperatorError> {
        let reply = self
            .gateway
            .complete(&self.request(block), &super::block_subject(block))?;
        parse_answer(block, &reply.arguments)
    }

    fn planned_input_tokens(&self, block: &BlockInput<'_>) -> Option<u64> {
        Some(estimate_request_tokens(&build_request(&self.model, block)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::testing::{FakeGateway, fixture};

    fn answer() -> Value {
        json!({
            "title": "Ana went to Porto with her sister Marta",
            "tags": ["Porto", "Marta"],
            "summary": "Ana tells Bot about a trip to Porto.",
            "key_points": ["Ana: went to Porto with Marta last weekend."],
            "should_extract": false,
        })
    }

    #[test]
    fn maps_the_answer_and_sends_the_block() {
        let (block, msgs) = fixture();
        let input = block.input(&msgs, 1);
        let gateway = FakeGateway::answering(answer());
        let op = LlmSummarizer::new(gateway.clone(), "m-1");
        let s = op.summarize(&input).unwrap();
        assert_eq!(s.title, "Ana went to Porto with her sister Marta");
        assert_eq!(s.tags, vec!["Porto", "Marta"]);
        assert_eq!(s.key_points.len(), 1);
        assert!(!s.should_extract);
        assert_eq!(s.block, input.id);
        let sent = gateway.requests();
        assert_eq!(sent.len(), 1);
        let user = &sent[0].messages[1].content;
        assert!(
            user.contains(r#""ref":"m1","speaker":"Ana","role":"user""#),
            "{user}"
        );
        assert!(
            !user.contains("system prompt text"),
            "system messages are not shown"
        );
        assert_eq!(sent[0].messages[0].content, PROMPT);
        assert_eq!(sent[0].tool.name, TOOL_NAME);
        // The result passes the common validation.
        assert!(crate::validate::summary(&input, s).is_ok());
    }

    #[test]
    fn missing_field_fails_naming_it() {
        let (block, msgs) = fixture();
        let mut a = answer();
        if let Some(m) = a.as_object_mut() {
            m.remove("should_extract");
        }
        let op = LlmSummarizer::new(FakeGateway::answering(a), "m-1");
        assert_eq!(
            op.summarize(&block.input(&msgs, 1)),
            Err(OperatorError::Failed(
                "answer: missing required field `should_extract`".into()
            ))
        );
    }

    #[test]
    fn empty_title_is_rejected_by_validation() {
        let (block, msgs) = fixture();
        let mut a = answer();
        a["title"] = json!("  ");
        let input = block.input(&msgs, 1);
        let s = LlmSummarizer::new(FakeGateway::answering(a), "m")
            .summarize(&input)
            .unwrap();
        assert!(crate::validate::summary(&input, s).is_err());
    }

    #[test]
    fn retry_has_another_key_and_config_follows_the_model() {
        let (block, msgs) = fixture();
        let gateway = FakeGateway::answering(answer());
        let op = LlmSummarizer::new(gateway, "m-1");
        let first = op.request(&block.input(&msgs, 1));
        let again = op.request(&block.input(&msgs, 1));
        let second = op.request(&block.input(&msgs, 2));
        assert_eq!(first.canonical(), again.canonical());
        assert_ne!(first.key(), second.key());
        assert!(second.messages[1].content.contains("Attempt 2:"));
        let other = LlmSummarizer::new(FakeGateway::answering(answer()), "m-2");
        assert_ne!(op.config_hash(), other.config_hash());
        assert_eq!(
            op.config_hash(),
            LlmSummarizer::new(FakeGateway::answering(answer()), "m-1").config_hash()
        );
    }

    #[test]
    fn halting_gateway_errors_halt() {
        let (block, msgs) = fixture();
        let gateway = FakeGateway::failing(crate::model::ModelError::Offline {
            operator: "llm-summarizer@1".into(),
            subject: "b".into(),
        });
        let err = LlmSummarizer::new(gateway, "m").summarize(&block.input(&msgs, 1));
        assert!(matches!(err, Err(OperatorError::Halted(_))), "{err:?}");
        let unavailable = crate::model::ModelError::Unavailable {
            status: Some(503),
            retryable: true,
            message: "503".into(),
        };
        let gateway = FakeGateway::failing(unavailable.clone());
        let err = LlmSummarizer::new(gateway, "m")
            .summarize(&block.input(&msgs, 1))
            .unwrap_err();
        // A failed run that keeps the model's cause; its recorded text is
        // the one a `Failed` carried before.
        assert_eq!(err, OperatorError::Model(unavailable));
        assert_eq!(err.failure_text().as_deref(), Some("model service: 503"));
    }
}
