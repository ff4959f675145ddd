//! Built-in evaluations (the `eval` and `diff --queries` commands).
//!
//! - [`locomo`]: retrieval on LoCoMo conversations against gold evidence.
//! - [`graph`]: the graph's coverage of LoCoMo observations, per projector.
//! - [`gold`]: gold answers of temporal questions as calendar periods.
//! - [`questions`]: question sets (LoCoMo or JSONL) and evidence scoring.
//! - [`query_diff`]: the same questions under two profiles.

use std::path::PathBuf;

use crate::MemoryError;

pub mod gold;
pub mod graph;
pub mod locomo;
pub mod query_diff;
pub mod questions;

/// Error of an evaluation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A call on the memory failed.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The temporary data directory could not be created.
    #[error("cannot create a temporary directory: {0}")]
    TempDir(std::io::Error),
    /// A question file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// A LoCoMo question file is not JSON.
    #[error("{}: malformed JSON: {source}", path.display())]
    MalformedJson {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A line of a JSONL question file is not a question object.
    #[error(
        "{}:{line}: not a question object ({source}); expected {{\"question\": \"…\", \"evidence\": […], \"thread\": \"…\", \"category\": n}}",
        path.display()
    )]
    NotAQuestion {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A question of a JSONL question file is empty.
    #[error("{}:{line}: `question` is empty", path.display())]
    EmptyQuestion {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
    },
    /// A LoCoMo conversation has no `session_N_observation` (needed by
    /// `--graph`).
    #[error("{}: conversation `{conversation}` has no session_N_observation", path.display())]
    NoObservations {
        /// The file.
        path: PathBuf,
        /// The conversation (sample id or file stem).
        conversation: String,
    },
    /// An observation entry is not of the LoCoMo form.
    #[error("{}: conversation `{conversation}`, {field}: {what}", path.display())]
    BadObservation {
        /// The file.
        path: PathBuf,
        /// The conversation (sample id or file stem).
        conversation: String,
        /// Where: `session_N_observation.SPEAKER[INDEX]`.
        field: String,
        /// What is wrong.
        what: String,
    },
    /// A projector's runs failed while building a graph to evaluate.
    #[error("projector `{projector}`: {runs} operator runs failed")]
    DerivationFailed {
        /// The projector id.
        projector: String,
        /// Failed runs.
        runs: u64,
    },
}
