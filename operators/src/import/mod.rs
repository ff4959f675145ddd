//! External memory import (spec §14): the pure parts.
//!
//! - [`format`](mod@format): parsing and capping the `stratagate.external-memory.v2`
//!   export (§14.1).
//! - [`decider`]: the five actions, the model-backed decider
//!   (`llm-import-decider@1`, prompt `operators/prompts/import_decider.md`),
//!   the normalization of its answer and the deterministic fallback (§14.2).
//! - [`event`]: the event card an applied decision writes (§14.4).
//! - [`text`]: candidates from plain text by a model
//!   (`llm-import-extractor@1`, prompt `operators/prompts/import_extractor.md`),
//!   parsed by the same candidate parser as the JSON export.
//!
//! Matching candidates against stored events and committing the import
//! need the log and the search index: they are in the facade
//! (`strataflow::Memory::import_external_memory`).

pub mod decider;
pub mod event;
pub mod format;
pub mod text;

pub use decider::{
    AUTO_APPLY_CONFIDENCE_MILLI, DEFAULT_TOP_K, ExistingEvent, FallbackDecider, ImportDecider,
    ModelDecider, Proposal, decider_id, decider_request, normalize_answer,
};
pub use event::{ImportedEventSource, imported_event, parse_mention, parse_period};
pub use format::{
    Candidate, CandidateTemporal, ExternalMemoryError, ExternalMemoryExport, FORMAT_V2,
    looks_like_export, parse_candidate, parse_export,
};
pub use text::{FORMAT_TEXT, TextCandidates, TextExtractor, TextImportError};
