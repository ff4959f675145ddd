//! Query-side records: what a search returned, how the agent assessed it, and
//! which refs it adopted.

use rkyv::{Archive, Deserialize, Serialize};

use crate::id::RecordId;

/// What a ref points at.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum RefKind {
    /// `event:<id>`.
    Event,
    /// `node:<id>` (a graph assertion id standing for its node).
    Node,
    /// `msg:<id>`.
    Message,
    /// `block:<id>:L<n>`.
    Block,
}

/// A reference to evidence.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Hash, Debug)]
#[rkyv(derive(Debug))]
pub struct EvidenceRef {
    /// Kind.
    pub kind: RefKind,
    /// Target record.
    pub id: RecordId,
    /// Block level, for block refs.
    pub level: Option<u8>,
}

/// One retrieval batch: a search or expand and the refs it returned.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct Retrieval {
    /// Tenant searched.
    pub tenant: String,
    /// 1-based ordinal of this batch in the tenant (keeps repeated identical searches distinct).
    pub ordinal: u64,
    /// The call, e.g. `search events`.
    pub call: String,
    /// The query text.
    pub query: String,
    /// Filters as canonical JSON.
    pub filters: String,
    /// Refs returned, in rank order.
    pub refs: Vec<EvidenceRef>,
}

/// The agent's verdict on a batch.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, Debug,
)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The evidence answers the question.
    Sufficient,
    /// Some evidence, not enough.
    Partial,
    /// Nothing useful.
    Insufficient,
}

/// The five-field assessment of one batch (spec §12).
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct Assessment {
    /// Tenant.
    pub tenant: String,
    /// The assessed batch.
    pub batch: RecordId,
    /// Verdict after normalization.
    pub verdict: Verdict,
    /// Evidence refs adopted (all from the batch).
    pub evidence: Vec<EvidenceRef>,
    /// How the evidence fits the question.
    pub fit: String,
    /// What is missing.
    pub missing: String,
    /// Next step (`answer`, `search`, `expand`, …).
    pub next: String,
}

/// Refs adopted into an answer; the only thing that reinforces weights.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct UseReceipt {
    /// Tenant.
    pub tenant: String,
    /// The batch the refs came from.
    pub batch: RecordId,
    /// The sufficient assessment that adopted them.
    pub assessment: RecordId,
    /// The adopted refs.
    pub refs: Vec<EvidenceRef>,
}
