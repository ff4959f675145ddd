//! Errors of a [`Memory`](super::Memory) call: one top-level
//! [`MemoryError`] whose variants are the failures of the layers below (the
//! log, ingest, derivation, recovery, export) and one typed family per kind
//! of facade operation ([`QueryError`], [`EvidenceError`], [`ProfileError`],
//! [`ConfigError`], [`ImportError`]), each carrying what a caller branches
//! on (which argument, which value, which record, why).

use strataflow_log::record::RecordKind;
use strataflow_log::{RecordId, StoreError};
use strataflow_pipeline::derive::DeriveError;
use strataflow_pipeline::ingest::IngestError;

/// Error of a [`Memory`](super::Memory) call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The log failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Ingest failed or refused the input.
    #[error(transparent)]
    Ingest(Box<IngestError>),
    /// The streaming ingester could not start.
    #[error(transparent)]
    Stream(Box<strataflow_pipeline::stream::StreamError>),
    /// Derivation failed (operator failures are recorded, not errors).
    #[error(transparent)]
    Derive(Box<DeriveError>),
    /// Recovery of a damaged directory failed.
    #[error(transparent)]
    Recover(Box<strataflow_log::recover::RecoverError>),
    /// A Parquet export failed.
    #[error(transparent)]
    Export(Box<strataflow_interchange::export::ExportError>),
    /// A Parquet import failed.
    #[error(transparent)]
    ImportParquet(Box<strataflow_interchange::import::ImportError>),
    /// An id, a filter or a thread given to a query, expand, show or
    /// governance call is bad or names nothing.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The evidence gate refused an assess or a use.
    #[error(transparent)]
    Evidence(#[from] EvidenceError),
    /// A profile is unknown, unreadable or incomplete.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The data directory's configuration is unreadable or refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An external memory import (or its undo) was refused.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// An external memory export is not valid.
    #[error(transparent)]
    ExternalImport(strataflow_operators::import::ExternalMemoryError),
    /// Candidates could not be extracted from a plain-text import (no
    /// model, the model failed or gave no valid answer).
    #[error(transparent)]
    ImportText(strataflow_operators::import::TextImportError),
    /// The import decider's model failed on a candidate.
    #[error("deciding import candidate {candidate}: {source}")]
    ImportDecider {
        /// 0-based candidate index.
        candidate: usize,
        /// The model's error.
        source: strataflow_operators::model::ModelError,
    },
    /// A record the log's indexes name is not in the log (damage).
    #[error("{}", missing_message(id, *of))]
    MissingRecord {
        /// The missing record.
        id: RecordId,
        /// The record that names it, when known.
        of: Option<RecordId>,
    },
    /// A view's state could not be encoded for saving.
    #[error("view {view} of tenant `{tenant}` cannot be encoded: {detail}")]
    ViewEncode {
        /// The view's key.
        view: String,
        /// The tenant.
        tenant: String,
        /// The encoder's message.
        detail: String,
    },
    /// A keyed-memory call (remember, recall, forget, purge) was refused
    /// or its embedding failed; nothing was stored.
    #[error(transparent)]
    KeyedMemory(super::keyed::KeyedMemoryError),
    /// The model gateways' lock was poisoned by a thread that panicked
    /// while holding it.
    #[error("the model gateway lock is poisoned")]
    GatewayPoisoned,
}

fn missing_message(id: &RecordId, of: Option<RecordId>) -> String {
    match of {
        Some(parent) => format!("record {id} of {parent} is missing"),
        None => format!("record {id} is missing"),
    }
}

impl From<DeriveError> for MemoryError {
    fn from(e: DeriveError) -> Self {
        Self::Derive(Box::new(e))
    }
}

impl From<strataflow_log::recover::RecoverError> for MemoryError {
    fn from(e: strataflow_log::recover::RecoverError) -> Self {
        Self::Recover(Box::new(e))
    }
}

impl From<IngestError> for MemoryError {
    fn from(e: IngestError) -> Self {
        Self::Ingest(Box::new(e))
    }
}

impl From<strataflow_log::EncodeError> for MemoryError {
    fn from(e: strataflow_log::EncodeError) -> Self {
        Self::Store(StoreError::Encode(e))
    }
}

/// A search filter of [`SearchRequest`](super::SearchRequest) that cannot
/// be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterProblem {
    /// `intent` is neither `first` nor `latest`.
    UnknownIntent,
    /// `from` or `to` is neither a date nor an RFC 3339 time.
    NotATime,
    /// `from` is after `to` (the value is `from`'s).
    FromAfterTo,
}

/// Error of a query, expand, show, context or governance call: the id, the
/// filter or the thread given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// An id argument that is not 4 to 64 hex digits (a usage error).
    #[error("`{shown}` is not a record id ({problem}): give 4 to 64 hex digits")]
    InvalidId {
        /// The id as given, cut to its first 72 characters.
        shown: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A search filter that cannot be applied (a usage error).
    #[error("{}", filter_message(field, value, *problem, other))]
    InvalidFilter {
        /// The request field: `intent`, `from` or `to`.
        field: &'static str,
        /// Its value as given.
        value: String,
        /// What is wrong with it.
        problem: FilterProblem,
        /// For [`FilterProblem::FromAfterTo`], the value of `to`.
        other: Option<String>,
    },
    /// No record of the tenant has this id or prefix.
    #[error("no record with id {id}")]
    NotFound {
        /// The id or prefix, normalized (lower case, no ref prefix).
        id: String,
    },
    /// An id prefix matches several records of the tenant.
    #[error("id prefix {prefix} is ambiguous: matches {}", matches.iter().map(RecordId::short).collect::<Vec<_>>().join(", "))]
    Ambiguous {
        /// The prefix.
        prefix: String,
        /// Some of the matches.
        matches: Vec<RecordId>,
    },
    /// The thread has no records.
    #[error("no thread `{thread}` in tenant `{tenant}`")]
    UnknownThread {
        /// Tenant.
        tenant: String,
        /// Thread.
        thread: String,
    },
    /// The id names a record of another kind than the call takes.
    #[error("{id} is a {} record, not {}", kind.name(), expected.phrase())]
    WrongKind {
        /// The record.
        id: RecordId,
        /// Its kind.
        kind: RecordKind,
        /// What the call takes.
        expected: Expected,
    },
    /// The graph assertion belongs to no node of the graph (at the time
    /// asked, or its events are forgotten).
    #[error("no graph node holds assertion {assertion}")]
    NoNode {
        /// The assertion.
        assertion: RecordId,
    },
    /// The block's extraction is not done: it has no level yet.
    #[error("block {} is not ready: it cannot decay or be expanded yet", block.short())]
    BlockNotReady {
        /// The block.
        block: RecordId,
    },
}

fn filter_message(
    field: &str,
    value: &str,
    problem: FilterProblem,
    other: &Option<String>,
) -> String {
    match problem {
        FilterProblem::UnknownIntent => {
            format!("--{field} `{value}`: expected first or latest")
        }
        FilterProblem::NotATime => {
            format!("--{field} `{value}` is not a date (2023-05-08) or an RFC 3339 time")
        }
        FilterProblem::FromAfterTo => format!(
            "--from `{value}` is after --to `{}`",
            other.as_deref().unwrap_or("")
        ),
    }
}

/// What a call taking an id expects it to name ([`QueryError::WrongKind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expected {
    /// An event (expand event, forget, restore, pin, unpin).
    Event,
    /// A graph assertion, standing for its node (expand node).
    GraphNode,
    /// A block (expand block).
    Block,
    /// A retrieval batch (assess, use).
    Batch,
    /// An import (`import undo`).
    Import,
}

impl Expected {
    /// How the error message names it.
    pub fn phrase(self) -> &'static str {
        match self {
            Self::Event => "an event",
            Self::GraphNode => "a graph node",
            Self::Block => "a block",
            Self::Batch => "a retrieval batch",
            Self::Import => "an import (give the import id printed by `import memory`)",
        }
    }
}

/// Error of the evidence gate (assess, use).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvidenceError {
    /// The batch has a use receipt: it is closed.
    #[error("batch {} is already recorded: it cannot be assessed or used again", batch.short())]
    BatchClosed {
        /// The batch.
        batch: RecordId,
    },
    /// The batch has no assessment yet, so nothing is adopted.
    #[error("batch {} has no assessment: assess it as sufficient first", batch.short())]
    NotAssessed {
        /// The batch.
        batch: RecordId,
    },
    /// Some refs are not adopted evidence of the batch.
    #[error(transparent)]
    RefsRefused(#[from] strataflow_operators::evidence_gate::UseError),
}

/// Error about a profile.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// No stored profile has this name.
    #[error("no profile `{name}` in this data directory")]
    NotFound {
        /// The name.
        name: String,
    },
    /// The stored profile does not parse.
    #[error("stored profile `{name}` is unreadable: {source}")]
    Unreadable {
        /// The name.
        name: String,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A profile to save uses a model-backed operator but names no model.
    #[error(
        "profile `{name}` uses a model-backed operator: give its model with --model NAME \
         (and --base-url URL, --api-key-env VAR)"
    )]
    ModelNotGiven {
        /// The name.
        name: String,
    },
    /// A stored profile uses a model-backed operator but names no model.
    #[error(
        "profile `{name}` uses a model-backed operator but names no model; recreate it with \
         `strataflow profile create {name} --model NAME --base-url URL [--api-key-env VAR]`"
    )]
    ModelMissing {
        /// The name.
        name: String,
    },
    /// A dense search on a profile that names no embedder.
    #[error(
        "profile `{name}` names no embedder: create one with `strataflow profile create NAME --embedder SPEC` and derive it"
    )]
    NoEmbedder {
        /// The name.
        name: String,
    },
    /// The profile names an operator that is not registered.
    #[error(transparent)]
    UnknownOperator(#[from] strataflow_operators::profile::ProfileError),
    /// The profile could not be encoded for storage.
    #[error("profile `{name}` cannot be encoded: {source}")]
    Encode {
        /// The name.
        name: String,
        /// The encoder's error.
        source: serde_json::Error,
    },
}

/// Error of the data directory's configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A block size of 0 turns was asked.
    #[error("--block-turns must be at least 1")]
    BlockTurnsZero,
    /// The stored block size is not a number.
    #[error("stored block_turns `{stored}` is not a number")]
    BlockTurnsUnreadable {
        /// The stored text.
        stored: String,
    },
    /// Another block size was asked for a directory that holds messages.
    #[error(
        "this data directory seals blocks of {stored} turns and already holds messages; \
         changing it to {wanted} would change existing block ids (use a new data directory)"
    )]
    BlockTurnsChange {
        /// The directory's block size.
        stored: u32,
        /// The block size asked.
        wanted: u32,
    },
    /// A stored configuration value does not parse.
    #[error("stored {key} is unreadable: {source}")]
    Unreadable {
        /// The configuration key.
        key: &'static str,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A configuration value could not be encoded.
    #[error("{key} cannot be encoded: {source}")]
    Encode {
        /// The configuration key.
        key: &'static str,
        /// The encoder's error.
        source: serde_json::Error,
    },
}

/// Error of an external memory import or of its undo.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The export's `exportedAt` is neither an RFC 3339 time nor a date.
    #[error("exportedAt `{exported_at}` is not an RFC 3339 time or a date; give --imported-at")]
    BadExportedAt {
        /// The value as written.
        exported_at: String,
    },
    /// No import time is known: the export has no `exportedAt` (or the file
    /// is plain text) and none was given.
    #[error("{}", if *plain_text {
        "the file is plain text, which has no exportedAt: give the import time with --imported-at (RFC 3339)"
    } else {
        "the export has no exportedAt: give the import time with --imported-at (RFC 3339)"
    })]
    NoImportTime {
        /// The file is plain text (not an export).
        plain_text: bool,
    },
    /// The same import was committed and undone before.
    #[error(
        "this import was committed before as {import} and undone by {undo}; an undone import is not redone"
    )]
    Undone {
        /// The import.
        import: RecordId,
        /// Its undo governance record.
        undo: RecordId,
    },
    /// The import to undo is already undone.
    #[error("import {import} was already undone (governance record {undo})")]
    AlreadyUndone {
        /// The import.
        import: RecordId,
        /// Its undo governance record.
        undo: RecordId,
    },
}
