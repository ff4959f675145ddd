//! Model-backed operators: `llm-summarizer@1`, `llm-extractor@1` and
//! `llm-projector@1`, which ask a model speaking the OpenAI-compatible chat
//! API through a [`ModelGateway`].
//!
//! Each one stays a pure function of its input and the gateway's answer: it
//! renders a canonical [`ModelRequest`](crate::model::ModelRequest) (system
//! prompt from `operators/prompts/`, a user turn with short refs `m1…` /
//! `e1…` for record ids, a forced tool whose JSON Schema demands the
//! answer's fields), and maps the tool's arguments back to records. An
//! answer that breaks the contract (a missing field, a ref that was not
//! given, a time in another form) fails the run with a reason naming the
//! item and field; the next attempt says in its user turn that an answer
//! was rejected, so its key differs and the gateway asks the model again
//! instead of serving the recorded answer. Outputs then pass the same
//! [`crate::validate`] checks as the heuristics'.
//!
//! - [`prompt`]: refs, JSON-line rendering, request building, the
//!   configuration hash (model, prompt hash, tool schema) and the token
//!   estimate.
//! - [`answer`]: typed access to an answer's fields and its time forms.
//! - [`summarizer`], [`extractor`], [`projector`]: the three operators.

pub mod answer;
pub mod extractor;
pub mod projector;
pub mod prompt;
pub mod summarizer;

use std::sync::Arc;

use strataflow_record::record::BlockSummary;

pub use extractor::LlmExtractor;
pub use projector::LlmProjector;
pub use prompt::estimate_request_tokens;
pub use summarizer::LlmSummarizer;

use crate::model::ModelGateway;
use crate::operator::{BlockInput, ExtractionInput};
use crate::profile::{Profile, Registry};

/// Adds the three model-backed operators, asking `model` through
/// `gateway`, to `registry` (replacing any registered under the same ids).
pub fn register(registry: &mut Registry, gateway: Arc<dyn ModelGateway>, model: &str) {
    registry.add_summarizer(Arc::new(LlmSummarizer::new(gateway.clone(), model)));
    registry.add_extractor(Arc::new(LlmExtractor::new(gateway.clone(), model)));
    registry.add_projector(Arc::new(LlmProjector::new(gateway, model)));
}

/// A profile named `name` using the three model-backed operators of
/// `endpoint`.
pub fn profile(name: &str, endpoint: crate::profile::ModelEndpoint) -> Profile {
    Profile {
        name: name.to_owned(),
        summarizer: summarizer::id().to_string(),
        extractor: extractor::id().to_string(),
        projector: projector::id().to_string(),
        model: Some(endpoint),
        embedder: None,
    }
}

/// What a block costs in model input, for planning.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BlockTokens {
    /// Approximate input tokens of the summarizer's request.
    pub summarize: u64,
    /// Approximate input tokens of the extractor's request, without the
    /// block's summary, its neighbours' key points and the timeline (not
    /// known before summarization): a lower bound.
    pub extract: u64,
    /// The most output tokens the two requests allow together.
    pub max_output: u64,
}

/// Approximate tokens the summarizer and extractor requests of `block`
/// would take with `model` (a quarter of the characters of each canonical
/// request; see [`estimate_request_tokens`]).
pub fn estimate_block_tokens(model: &str, block: &BlockInput<'_>) -> BlockTokens {
    let empty = BlockSummary {
        tenant: block.block.tenant.clone(),
        block: block.id,
        title: String::new(),
        tags: Vec::new(),
        summary: String::new(),
        key_points: Vec::new(),
        should_extract: true,
    };
    let input = ExtractionInput {
        target: *block,
        summary: &empty,
        previous_key_points: None,
        next_key_points: None,
        timeline: crate::operator::Timeline::EMPTY,
    };
    BlockTokens {
        summarize: estimate_request_tokens(&summarizer::build_request(model, block)),
        extract: estimate_request_tokens(&extractor::request_with(model, &input, &[])),
        max_output: u64::from(summarizer::MAX_TOKENS) + u64::from(extractor::MAX_TOKENS),
    }
}

/// What a block request is about, for gateway errors.
fn block_subject(block: &BlockInput<'_>) -> String {
    format!(
        "block {} of thread `{}`",
        block.id.short(),
        block.block.thread
    )
}

#[cfg(test)]
pub(crate) mod testing {
    //! A closure-backed gateway that records requests, and a small block.

    use std::sync::{Arc, Mutex};

    use serde_json::Value;
    use strataflow_record::record::{Block, Message, Role, ToolCall};
    use strataflow_record::{RecordId, SourceTime};

    use crate::model::{ModelError, ModelGateway, ModelReply, ModelRequest};
    use crate::operator::BlockInput;

    type Answer = dyn Fn(&ModelRequest) -> Result<Value, ModelError> + Send + Sync;

    /// Answers with a closure of the request and keeps every request.
    pub struct FakeGateway {
        answer: Box<Answer>,
        requests: Mutex<Vec<ModelRequest>>,
    }

    impl FakeGateway {
        pub fn new(
            answer: impl Fn(&ModelRequest) -> Result<Value, ModelError> + Send + Sync + 'static,
        ) -> Arc<Self> {
            Arc::new(Self {
                answer: Box::new(answer),
                requests: Mutex::new(Vec::new()),
            })
        }

        pub fn answering(arguments: Value) -> Arc<Self> {
            Self::new(move |_| Ok(arguments.clone()))
        }

        pub fn failing(error: ModelError) -> Arc<Self> {
            Self::new(move |_| Err(error.clone()))
        }

        pub fn requests(&self) -> Vec<ModelRequest> {
            self.requests.lock().map(|r| r.clone()).unwrap_or_default()
        }
    }

    impl ModelGateway for FakeGateway {
        fn complete(
            &self,
            request: &ModelRequest,
            _subject: &str,
        ) -> Result<ModelReply, ModelError> {
            if let Ok(mut r) = self.requests.lock() {
                r.push(request.clone());
            }
            (self.answer)(request).map(|arguments| ModelReply {
                arguments,
                from_log: false,
            })
        }
    }

    /// A block and its id.
    pub struct Fixture {
        pub block: Block,
        pub id: RecordId,
    }

    impl Fixture {
        pub fn input<'a>(
            &'a self,
            messages: &'a [(RecordId, Message)],
            attempt: u32,
        ) -> BlockInput<'a> {
            BlockInput {
                id: self.id,
                block: &self.block,
                messages,
                attempt,
                analyses: None,
            }
        }
    }

    pub fn message(
        i: u8,
        role: Role,
        speaker: Option<&str>,
        content: &str,
        ts: &str,
    ) -> (RecordId, Message) {
        (
            RecordId([i + 1; 32]),
            Message {
                tenant: "acme".into(),
                thread: "t1".into(),
                external_id: format!("x{i}"),
                position: u64::from(i),
                role,
                speaker: speaker.map(str::to_owned),
                content: content.into(),
                tool_calls: Vec::new(),
                time: SourceTime::parse_rfc3339(ts).unwrap_or(SourceTime {
                    utc_ms: 0,
                    offset_minutes: None,
                }),
            },
        )
    }

    /// Four messages: a system prompt (not shown), Ana (m1), Bot with a
    /// tool call (m2), Ana (m3).
    pub fn fixture() -> (Fixture, Vec<(RecordId, Message)>) {
        let mut bot = message(
            2,
            Role::Assistant,
            Some("Bot"),
            "Wow, that's great! I noted it.",
            "2024-05-10T21:31:00+02:00",
        );
        bot.1.tool_calls.push(ToolCall {
            name: "note".into(),
            arguments: None,
            result: None,
        });
        let msgs = vec![
            message(
                0,
                Role::System,
                None,
                "system prompt text",
                "2024-05-10T21:29:00+02:00",
            ),
            message(
                1,
                Role::User,
                Some("Ana"),
                "I went to Porto with my sister Marta last weekend.",
                "2024-05-10T21:30:00+02:00",
            ),
            bot,
            message(
                3,
                Role::User,
                None,
                "We're going to Sintra on 20 May. I prefer window seats.",
                "2024-05-11T09:00:00+02:00",
            ),
        ];
        let block = Block {
            tenant: "acme".into(),
            thread: "t1".into(),
            ordinal: 1,
            start_turn: 1,
            end_turn: 2,
            first_position: 0,
            last_position: 3,
            messages: msgs.iter().map(|(id, _)| *id).collect(),
            time: msgs.last().map(|(_, m)| m.time).unwrap_or(SourceTime {
                utc_ms: 0,
                offset_minutes: None,
            }),
            l4: String::new(),
            l3: String::new(),
        };
        (
            Fixture {
                block,
                id: RecordId([99; 32]),
            },
            msgs,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{FakeGateway, fixture};
    use super::*;
    use serde_json::json;

    #[test]
    fn register_adds_the_three_operators() {
        let mut registry = Registry::builtin();
        register(&mut registry, FakeGateway::answering(json!({})), "m");
        let ops = registry
            .resolve(&profile(
                "llm",
                crate::profile::ModelEndpoint {
                    model: "m".into(),
                    base_url: "http://127.0.0.1:9".into(),
                    api_key_env: None,
                    concurrency: 1,
                    timeout_secs: 1,
                },
            ))
            .unwrap();
        assert_eq!(ops.summarizer.id().to_string(), "llm-summarizer@1");
        assert_eq!(ops.extractor.id().to_string(), "llm-extractor@1");
        assert_eq!(ops.projector.id().to_string(), "llm-projector@1");
    }

    #[test]
    fn block_estimate_grows_with_the_block() {
        let (block, msgs) = fixture();
        let full = estimate_block_tokens("m", &block.input(&msgs, 1));
        let short = estimate_block_tokens("m", &block.input(&msgs[..2], 1));
        assert!(full.summarize > short.summarize, "{full:?} {short:?}");
        assert!(
            full.extract > full.summarize,
            "the extractor prompt is longer"
        );
        let op = LlmSummarizer::new(FakeGateway::answering(json!({})), "m");
        assert_eq!(full.summarize, op.estimate_tokens(&block.input(&msgs, 1)));
        assert_eq!(full.max_output, 1024 + 4096);
    }
}
