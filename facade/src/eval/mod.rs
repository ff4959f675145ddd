//! Built-in evaluations (the `eval` and `diff --queries` commands).
//!
//! - [`locomo`]: retrieval on LoCoMo conversations against gold evidence.
//! - [`gold`]: gold answers of temporal questions as calendar periods.
//! - [`questions`]: question sets (LoCoMo or JSONL) and evidence scoring.
//! - [`query_diff`]: the same questions under two profiles.

use std::path::PathBuf;

use crate::MemoryError;

pub mod gold;
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
}
