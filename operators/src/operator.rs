//! The operator contract: summarizer, extractor and projector traits, each
//! with an id `name@version` and a hash of its configuration.
//!
//! Operators are pure: the same inputs and configuration give byte-identical
//! outputs on any machine. They never read a clock, a random source or
//! storage. Their outputs do not name the operator (the pipeline's
//! `Derivation` record does), so two versions that produce the same event
//! produce the same record id.

use std::fmt;

use strataflow_record::record::{Block, BlockSummary, Event, GraphAssertion, Message};
use strataflow_record::{Digest, RecordId};

pub use crate::timeline::Timeline;

/// `name@version`, e.g. `heuristic-extractor@1`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, serde::Serialize)]
pub struct OperatorId {
    /// Name.
    pub name: String,
    /// Version.
    pub version: u32,
}

impl OperatorId {
    /// An id from its parts.
    pub fn new(name: &str, version: u32) -> Self {
        Self {
            name: name.to_owned(),
            version,
        }
    }

    /// Parses `name@version`.
    pub fn parse(text: &str) -> Option<Self> {
        let (name, version) = text.trim().rsplit_once('@')?;
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
        if !valid {
            return None;
        }
        Some(Self::new(name, version.parse().ok()?))
    }
}

impl fmt::Display for OperatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name, self.version)
    }
}

/// The hash of an operator configuration: blake3 (key-derivation mode,
/// context `strataflow operator config v1`) over the operator id and its
/// canonical configuration text.
pub fn config_hash(id: &OperatorId, canonical_config: &str) -> Digest {
    let mut h = blake3::Hasher::new_derive_key("strataflow operator config v1");
    h.update(id.to_string().as_bytes());
    h.update(&[0]);
    h.update(canonical_config.as_bytes());
    RecordId(*h.finalize().as_bytes())
}

/// Why an operator run did not produce outputs.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OperatorError {
    /// The run's output was rejected: the text goes into a failed
    /// `Derivation` and the run is retried within the attempt limit, so it
    /// must be deterministic for deterministic operators (no times, no
    /// addresses). It stays text: it is the record's content (its bytes are
    /// in record ids), and the caller records it rather than branch on it.
    #[error("{0}")]
    Failed(String),
    /// The model could not answer this run (unavailable after its retries,
    /// unusable output): a failed run like [`OperatorError::Failed`],
    /// recorded with the model error's text.
    #[error("{0}")]
    Model(crate::model::ModelError),
    /// The job must stop before anything of this run is written (offline
    /// and the model call is not recorded; the model is not configured or
    /// unreachable): [`ModelError::halts`](crate::model::ModelError::halts).
    #[error("{0}")]
    Halted(crate::model::ModelError),
}

impl OperatorError {
    /// A failed run with this reason.
    pub fn failed(reason: impl Into<String>) -> Self {
        Self::Failed(reason.into())
    }

    /// The text a failed `Derivation` records for this error (`None` for a
    /// halt, which records nothing).
    pub fn failure_text(&self) -> Option<String> {
        match self {
            Self::Failed(reason) => Some(reason.clone()),
            Self::Model(e) => Some(e.to_string()),
            Self::Halted(_) => None,
        }
    }
}

/// A block with its messages (L5), as operators see it.
#[derive(Clone, Copy, Debug)]
pub struct BlockInput<'a> {
    /// The block's id.
    pub id: RecordId,
    /// The block.
    pub block: &'a Block,
    /// Its messages, in order, with their ids.
    pub messages: &'a [(RecordId, Message)],
    /// Attempt number of this run, from 1. Deterministic operators ignore
    /// it; a model-backed operator puts it in its request so a retry after
    /// an invalid answer asks again instead of being served the recorded one.
    pub attempt: u32,
    /// The text analysis of each message ([`strataflow_text::Analysis::of`]
    /// its content), in the order of `messages`, when the pipeline computed
    /// it; `None` (or a length that is not that of `messages`) and an
    /// operator analyses the text itself, with the same result
    /// ([`BlockInput::analysis`]).
    pub analyses: Option<&'a [strataflow_text::Analysis]>,
}

impl<'a> BlockInput<'a> {
    /// The carried analysis of message `index` of [`BlockInput::messages`],
    /// if the pipeline computed one for every message.
    pub fn analysis(&self, index: usize) -> Option<&'a strataflow_text::Analysis> {
        self.analyses
            .filter(|a| a.len() == self.messages.len())
            .and_then(|a| a.get(index))
    }
}

/// The text analyses of a block's messages ([`BlockInput::analyses`]),
/// computed once by the worker that owns the thread.
pub fn analyse_messages(messages: &[(RecordId, Message)]) -> Vec<strataflow_text::Analysis> {
    messages
        .iter()
        .map(|(_, m)| strataflow_text::Analysis::of(&m.content))
        .collect()
}

/// L0–L2 of a block (spec §5).
pub trait Summarizer: Send + Sync {
    /// `name@version`.
    fn id(&self) -> OperatorId;
    /// Hash of the configuration.
    fn config_hash(&self) -> Digest;
    /// Summarizes one block. The output's `tenant` and `block` fields are
    /// set by the caller.
    fn summarize(&self, block: &BlockInput<'_>) -> Result<BlockSummary, OperatorError>;
    /// Whether [`Summarizer::summarize`] reads the carried text analysis
    /// ([`BlockInput::analyses`]): the pipeline computes it only for an
    /// operator that does, once per block for the summarizer and the
    /// extractor. False unless a summarizer says otherwise.
    fn reads_analysis(&self) -> bool {
        false
    }
    /// For a model-backed operator: the approximate input tokens of the one
    /// model request a run on `block` makes (for cost plans, before any
    /// call). `None`: the operator calls no model.
    fn planned_input_tokens(&self, block: &BlockInput<'_>) -> Option<u64> {
        let _ = block;
        None
    }
}

/// What the extractor sees (spec §7.1): the target block with its summary,
/// and the key points of its neighbours as context only.
#[derive(Clone, Copy, Debug)]
pub struct ExtractionInput<'a> {
    /// The target block.
    pub target: BlockInput<'a>,
    /// Its summary.
    pub summary: &'a BlockSummary,
    /// L2 key points of the previous block of the thread, if any.
    pub previous_key_points: Option<&'a [String]>,
    /// L2 key points of the next block of the thread, if any.
    pub next_key_points: Option<&'a [String]>,
    /// Earlier active events of the same thread, most recent last (at most
    /// [`TIMELINE_LIMIT`]): the only events an output may supersede or
    /// conflict with. Their ids are at hand; the events are read when the
    /// extractor asks for them ([`Timeline::events`]).
    pub timeline: Timeline<'a>,
}

/// Most earlier events given to an extractor as its timeline.
pub const TIMELINE_LIMIT: usize = 64;

/// The extractor's answer.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Extraction {
    /// Whether the block holds durable events.
    pub should_extract: bool,
    /// Why (especially when there is nothing).
    pub reason: String,
    /// The events (validated by the pipeline before they are stored).
    pub events: Vec<Event>,
}

/// Events from one block (spec §7).
pub trait Extractor: Send + Sync {
    /// `name@version`.
    fn id(&self) -> OperatorId;
    /// Hash of the configuration.
    fn config_hash(&self) -> Digest;
    /// Extracts event cards whose sources are messages of the target block.
    fn extract(&self, input: &ExtractionInput<'_>) -> Result<Extraction, OperatorError>;
    /// Whether [`Extractor::extract`] reads the carried text analysis
    /// ([`BlockInput::analyses`]): the pipeline computes it only for an
    /// operator that does, once per block for the summarizer and the
    /// extractor. False unless an extractor says otherwise.
    fn reads_analysis(&self) -> bool {
        false
    }
    /// For a model-backed operator: the approximate input tokens of the one
    /// model request a run on `block` makes (for cost plans, before any
    /// call). `None`: the operator calls no model.
    fn planned_input_tokens(&self, block: &BlockInput<'_>) -> Option<u64> {
        let _ = block;
        None
    }
}

/// What the projector sees: one batch of events (those extracted from one
/// block), with their ids.
#[derive(Clone, Copy, Debug)]
pub struct ProjectionInput<'a> {
    /// Tenant of the events.
    pub tenant: &'a str,
    /// The batch.
    pub events: &'a [(RecordId, Event)],
    /// Attempt number of this run, from 1 (see [`BlockInput::attempt`]).
    pub attempt: u32,
}

/// Graph assertions from events (spec §10).
pub trait Projector: Send + Sync {
    /// `name@version`.
    fn id(&self) -> OperatorId;
    /// Hash of the configuration.
    fn config_hash(&self) -> Digest;
    /// Proposes nodes and edges; every assertion must cite only events of
    /// the batch (others are dropped by validation).
    fn project(&self, input: &ProjectionInput<'_>) -> Result<Vec<GraphAssertion>, OperatorError>;
    /// For a model-backed projector: the approximate input tokens of the
    /// request for the events of `block` (estimated from the block, since
    /// its events are not known before extraction). `None`: no model.
    fn planned_input_tokens(&self, block: &BlockInput<'_>) -> Option<u64> {
        let _ = block;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_ids_parse_and_print() {
        let id = OperatorId::parse("heuristic-extractor@2");
        assert_eq!(id, Some(OperatorId::new("heuristic-extractor", 2)));
        assert_eq!(OperatorId::new("a", 1).to_string(), "a@1");
        assert_eq!(OperatorId::parse("a@x"), None);
        assert_eq!(OperatorId::parse("@1"), None);
        assert_eq!(OperatorId::parse("a b@1"), None);
    }

    #[test]
    fn config_hash_depends_on_id_and_config() {
        let a = config_hash(&OperatorId::new("x", 1), "{}");
        assert_eq!(a, config_hash(&OperatorId::new("x", 1), "{}"));
        assert_ne!(a, config_hash(&OperatorId::new("x", 2), "{}"));
        assert_ne!(a, config_hash(&OperatorId::new("x", 1), "{\"k\":1}"));
    }
}
