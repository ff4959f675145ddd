//! Every record kind of the log (DESIGN.md §2). A record never changes; what
//! looks like a change is a new record, and state is a view over all of them.

mod block;
mod derived;
mod governance;
mod memory;
mod message;
mod provenance;
mod query;

pub use block::Block;
pub use derived::{
    Assertion, BlockSummary, Criticality, Event, EventTemporal, EventType, Fact, FactMode,
    GraphAssertion, NodeKey, NodeType, Occurrence, Precision, Scope, TimeBasis,
};
pub use governance::{
    Actor, EXTERNAL_IMPORT_THREAD_PREFIX, Governance, GovernanceAction, ImportAction,
    ImportDecision, ImportSource,
};
pub use memory::{Embedding, EmbeddingError, KeyedMemory, MemoryAction, MemoryPurge, MetadataPair};
pub use message::{Message, Role, ToolCall};
pub use provenance::{Derivation, ModelCall, Outcome, TokenUsage};
pub use query::{Assessment, EvidenceRef, RefKind, Retrieval, UseReceipt, Verdict};

use crate::id::RecordId;

/// The kind of a record: one byte in the envelope and in index keys.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum RecordKind {
    /// [`Message`].
    Message = 1,
    /// [`Block`].
    Block = 2,
    /// [`BlockSummary`].
    BlockSummary = 3,
    /// [`Event`].
    Event = 4,
    /// [`GraphAssertion`].
    GraphAssertion = 5,
    /// [`Derivation`].
    Derivation = 6,
    /// [`ModelCall`].
    ModelCall = 7,
    /// [`Governance`].
    Governance = 8,
    /// [`Retrieval`].
    Retrieval = 9,
    /// [`Assessment`].
    Assessment = 10,
    /// [`UseReceipt`].
    UseReceipt = 11,
    /// [`ImportSource`].
    ImportSource = 12,
    /// [`Embedding`].
    Embedding = 13,
    /// [`KeyedMemory`].
    KeyedMemory = 14,
    /// [`MemoryPurge`].
    MemoryPurge = 15,
}

impl RecordKind {
    /// Whether records of this kind are indexed under the records they cite
    /// (the `children` keyspace): the kinds looked up by what they cite —
    /// an input's derivations, a target's governance, a block's import
    /// sources, a batch's receipts and assessments, the retrievals of an
    /// item, a record's embeddings. Content records (blocks, summaries, events, graph assertions)
    /// are not: their links are in the records themselves, and indexing
    /// them tripled the index entries of a backfill with no reader.
    pub fn indexed_as_child(self) -> bool {
        matches!(
            self,
            Self::Derivation
                | Self::Governance
                | Self::Retrieval
                | Self::Assessment
                | Self::UseReceipt
                | Self::ImportSource
                | Self::Embedding
        )
    }

    /// Every kind, in code order.
    pub const ALL: [Self; 15] = [
        Self::Message,
        Self::Block,
        Self::BlockSummary,
        Self::Event,
        Self::GraphAssertion,
        Self::Derivation,
        Self::ModelCall,
        Self::Governance,
        Self::Retrieval,
        Self::Assessment,
        Self::UseReceipt,
        Self::ImportSource,
        Self::Embedding,
        Self::KeyedMemory,
        Self::MemoryPurge,
    ];

    /// The kind's byte code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The kind with this byte code.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The schema version this build writes and reads for the kind.
    pub fn schema_version(self) -> u16 {
        1
    }

    /// snake_case name, as in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Block => "block",
            Self::BlockSummary => "block_summary",
            Self::Event => "event",
            Self::GraphAssertion => "graph_assertion",
            Self::Derivation => "derivation",
            Self::ModelCall => "model_call",
            Self::Governance => "governance",
            Self::Retrieval => "retrieval",
            Self::Assessment => "assessment",
            Self::UseReceipt => "use_receipt",
            Self::ImportSource => "import_source",
            Self::Embedding => "embedding",
            Self::KeyedMemory => "keyed_memory",
            Self::MemoryPurge => "memory_purge",
        }
    }
}

/// Any record.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(untagged)]
pub enum Record {
    /// A raw message (L5).
    Message(Message),
    /// A sealed block.
    Block(Block),
    /// L0–L2 of a block.
    BlockSummary(BlockSummary),
    /// An event card.
    Event(Event),
    /// A graph node or edge proposal.
    GraphAssertion(GraphAssertion),
    /// An operator run.
    Derivation(Derivation),
    /// A recorded model call.
    ModelCall(ModelCall),
    /// A governance decision.
    Governance(Governance),
    /// A retrieval batch.
    Retrieval(Retrieval),
    /// An assessment of a batch.
    Assessment(Assessment),
    /// Adopted refs.
    UseReceipt(UseReceipt),
    /// An external memory import.
    ImportSource(ImportSource),
    /// A vector of a record's text.
    Embedding(Embedding),
    /// A keyed memory remembered or forgotten.
    KeyedMemory(KeyedMemory),
    /// A purge of keyed memories by age.
    MemoryPurge(MemoryPurge),
}

impl Record {
    /// The record's kind.
    pub fn kind(&self) -> RecordKind {
        match self {
            Self::Message(_) => RecordKind::Message,
            Self::Block(_) => RecordKind::Block,
            Self::BlockSummary(_) => RecordKind::BlockSummary,
            Self::Event(_) => RecordKind::Event,
            Self::GraphAssertion(_) => RecordKind::GraphAssertion,
            Self::Derivation(_) => RecordKind::Derivation,
            Self::ModelCall(_) => RecordKind::ModelCall,
            Self::Governance(_) => RecordKind::Governance,
            Self::Retrieval(_) => RecordKind::Retrieval,
            Self::Assessment(_) => RecordKind::Assessment,
            Self::UseReceipt(_) => RecordKind::UseReceipt,
            Self::ImportSource(_) => RecordKind::ImportSource,
            Self::Embedding(_) => RecordKind::Embedding,
            Self::KeyedMemory(_) => RecordKind::KeyedMemory,
            Self::MemoryPurge(_) => RecordKind::MemoryPurge,
        }
    }

    /// The tenant the record belongs to (`""` for tenant-less model calls).
    pub fn tenant(&self) -> &str {
        match self {
            Self::Message(r) => &r.tenant,
            Self::Block(r) => &r.tenant,
            Self::BlockSummary(r) => &r.tenant,
            Self::Event(r) => &r.tenant,
            Self::GraphAssertion(r) => &r.tenant,
            Self::Derivation(r) => &r.tenant,
            Self::ModelCall(_) => "",
            Self::Governance(r) => &r.tenant,
            Self::Retrieval(r) => &r.tenant,
            Self::Assessment(r) => &r.tenant,
            Self::UseReceipt(r) => &r.tenant,
            Self::ImportSource(r) => &r.tenant,
            Self::Embedding(r) => &r.tenant,
            Self::KeyedMemory(r) => &r.tenant,
            Self::MemoryPurge(r) => &r.tenant,
        }
    }

    /// The thread, for records that belong to one (messages and blocks).
    pub fn thread(&self) -> Option<&str> {
        match self {
            Self::Message(r) => Some(&r.thread),
            Self::Block(r) => Some(&r.thread),
            _ => None,
        }
    }

    /// The ids this record cites. They are part of its content, hence of its
    /// id, and must exist in the log before it.
    pub fn parents(&self) -> Vec<RecordId> {
        let refs = |refs: &[EvidenceRef]| refs.iter().map(|r| r.id).collect::<Vec<_>>();
        match self {
            Self::Message(_) | Self::ModelCall(_) => Vec::new(),
            Self::ImportSource(r) => {
                let mut p = vec![r.message, r.block];
                for d in &r.decisions {
                    p.extend(&d.targets);
                    p.extend(d.created_event);
                }
                p
            }
            Self::Block(r) => r.messages.clone(),
            Self::BlockSummary(r) => vec![r.block],
            Self::Event(r) => {
                let mut p = vec![r.block];
                p.extend(&r.source_messages);
                p.extend(&r.temporal.supersedes);
                p.extend(&r.temporal.conflicts_with);
                p
            }
            Self::GraphAssertion(r) => r.source_events.clone(),
            Self::Derivation(r) => r.inputs.iter().chain(&r.outputs).copied().collect(),
            Self::Governance(r) => std::iter::once(r.target).chain(r.previous).collect(),
            Self::Retrieval(r) => refs(&r.refs),
            Self::Assessment(r) => {
                let mut p = vec![r.batch];
                p.extend(refs(&r.evidence));
                p
            }
            Self::UseReceipt(r) => {
                let mut p = vec![r.batch, r.assessment];
                p.extend(refs(&r.refs));
                p
            }
            Self::Embedding(r) => vec![r.source],
            Self::KeyedMemory(r) => r.previous.into_iter().collect(),
            Self::MemoryPurge(r) => r.purged.clone(),
        }
    }
}
