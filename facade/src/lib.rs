//! # strataflow
//!
//! Long-term memory for AI agents as a durable dataflow pipeline over an
//! append-only, content-hashed log. This crate is the facade: [`Memory`]
//! opens a data directory, [`Memory::tenant`] gives the per-tenant verbs
//! ([`TenantMemory`]: search, expand, context, assess, use, governance,
//! events, graph, views); the `strataflow` binary is its command line.
//!
//! Errors are one [`MemoryError`] whose variants are the failures of the
//! layers below and one typed family per kind of operation
//! ([`QueryError`], [`EvidenceError`], [`ProfileError`], [`ConfigError`],
//! [`ImportError`]).
//!
//! See [`Memory`] for a runnable example.
#![warn(missing_docs)]

// reason: the `eval` and `diff --queries` commands of the binary and the
// temporal-gold tests use it; bench and evaluation tooling, not library API.
#[doc(hidden)]
pub mod eval;
pub mod limits;
mod memory;

pub use memory::JsonlFile;
pub use memory::{
    AssessOutcome, BlockView, ExpandedEvent, ExpandedNode, SourceMessage, UseOutcome, ViewReport,
};
pub use memory::{
    BlockInfo, ConfigError, DerivationPlan, DerivationStatus, EmbedderStatus, EventListing,
    EvidenceError, Expected, FailureInfo, FilterProblem, ImportError, Memory, MemoryError,
    ModelCallTotals, OperatorPlan, OperatorStatus, ProfileError, ProfileEvents, QueryError, Stats,
    ThreadBlocks,
};
pub use memory::{
    Channel, LEXICAL_FIRST_WORDS, SearchHit, SearchRequest, SearchResponse, Searcher, TenantStats,
};
pub use memory::{
    ContextOptions, EventsQuery, ExpandOptions, SearchOptions, TenantMemory, ViewsOptions,
};
pub use memory::{DEFAULT_DENSE_LIMIT, DenseHit, DenseResponse, EmbedStats};
pub use memory::{
    DEFAULT_PURGE_LIMIT, DEFAULT_RECALL_LIMIT, EMBEDDER_CONFIG, EmbeddingService, KeyedMemoryError,
    MAX_KEY_BYTES, MAX_RECALL_LIMIT, PurgeOptions, PurgeReport, RecallMatch, RecallOptions,
    RememberEntry, Remembered, StoredMemory, embedder_from_spec, older_than_cutoff, parse_duration,
};
pub use memory::{
    ExternalImportOptions, ExternalImportReport, IMPORT_BLOCK_TAG, ReportedDecision, UndoReport,
};
pub use strataflow_interchange as interchange;
pub use strataflow_log as log;
pub use strataflow_materializers as materializers;
pub use strataflow_model as model;
pub use strataflow_operators as operators;
pub use strataflow_pipeline as pipeline;
