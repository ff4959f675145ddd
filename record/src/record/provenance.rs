//! Provenance records: which operator made which outputs from which inputs,
//! and the model calls made on the way.

use rkyv::{Archive, Deserialize, Serialize};

use crate::id::{Digest, RecordId};

/// How an operator run ended.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// Produced its outputs (possibly none, validly).
    Ok,
    /// Chose not to run (e.g. `should_extract` was false).
    Skipped {
        /// Why.
        reason: String,
    },
    /// Failed; may be retried.
    Failed {
        /// The error, as text.
        error: String,
    },
}

/// One operator run.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct Derivation {
    /// Tenant of the inputs.
    pub tenant: String,
    /// Operator id, `name@version`.
    pub operator: String,
    /// Hash of the operator's configuration.
    pub config_hash: Digest,
    /// Input records.
    pub inputs: Vec<RecordId>,
    /// Output records (written before this record).
    pub outputs: Vec<RecordId>,
    /// How it ended.
    pub outcome: Outcome,
    /// 1-based attempt number.
    pub attempt: u32,
}

/// Token counts reported by a model API.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Debug, Default,
)]
#[rkyv(derive(Debug))]
pub struct TokenUsage {
    /// Input tokens.
    pub prompt_tokens: u32,
    /// Output tokens.
    pub completion_tokens: u32,
}

/// A recorded model request and its response; a replay serves the response
/// from the log instead of calling the model. Never holds secrets.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct ModelCall {
    /// Hash of (operator id, model, canonical request): the lookup key.
    pub request_hash: Digest,
    /// Operator id.
    pub operator: String,
    /// Model name.
    pub model: String,
    /// Canonical request JSON.
    pub request: String,
    /// Response body.
    pub response: String,
    /// Token usage.
    pub usage: TokenUsage,
}
