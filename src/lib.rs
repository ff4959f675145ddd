//! # strataflow
//!
//! Long-term memory for AI agents as a durable dataflow pipeline over an
//! append-only, content-hashed log. This crate is the facade: [`Memory`]
//! opens a data directory; the `strataflow` binary is its command line.
//!
//! ```no_run
//! use strataflow::Memory;
//! use strataflow::pipeline::ingest::OnInvalid;
//!
//! let memory = Memory::open("strataflow-data")?;
//! let options = memory.ingest_options()?;
//! let stats = memory.ingest_jsonl(
//!     "examples/data/sample.jsonl".as_ref(),
//!     &options,
//!     OnInvalid::Refuse,
//!     &mut |_| {},
//! )?;
//! println!("stored {} messages, sealed {} blocks", stats.stored, stats.blocks_sealed);
//! # Ok::<(), strataflow::MemoryError>(())
//! ```

pub mod eval;
mod memory;

pub use memory::{
    AssessOutcome, BlockView, ExpandedEvent, ExpandedNode, SourceMessage, UseOutcome, ViewReport,
};
pub use memory::{
    BlockInfo, ConfigError, DerivationPlan, DerivationStatus, EventListing, EvidenceError,
    Expected, FailureInfo, FilterProblem, ImportError, Memory, MemoryError, ModelCallTotals,
    OperatorPlan, OperatorStatus, ProfileError, ProfileEvents, QueryError, Stats, ThreadBlocks,
};
pub use memory::{Channel, SearchHit, SearchRequest, SearchResponse, Searcher};
pub use memory::{
    ExternalImportOptions, ExternalImportReport, IMPORT_BLOCK_TAG, ReportedDecision, UndoReport,
};
pub use strataflow_interchange as interchange;
pub use strataflow_log as log;
pub use strataflow_materializers as materializers;
pub use strataflow_model as model;
pub use strataflow_operators as operators;
pub use strataflow_pipeline as pipeline;
