//! What an ingest run reports: its counters ([`IngestStats`], also the
//! progress of a running one) and its error ([`IngestError`]). Shared by the
//! ingest driver and the runtime it feeds.

use crate::source::{InputError, SourceError};
use strataflow_log::StoreError;

/// How many input problems a refusal lists (the total is always given).
pub const MAX_LISTED_ERRORS: usize = 20;

/// Error of an ingest run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The source could not be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The log refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Bad input, nothing stored.
    #[error("{}", refusal_text(errors, *total))]
    Refused {
        /// The first problems, in input order.
        errors: Vec<InputError>,
        /// How many items were bad.
        total: u64,
    },
    /// The rejects file could not be written.
    #[error("cannot write the rejects file: {0}")]
    Rejects(#[source] std::io::Error),
    /// Catching up derivation before the run failed.
    #[error(transparent)]
    Derive(#[from] crate::derive::DeriveError),
    /// A stage of the runtime stopped.
    #[error("pipeline failure: {0}")]
    Worker(WorkerFailure),
    /// An operator stopped the run (offline and a model call is not
    /// recorded, the model is not configured or unreachable). What was
    /// committed before stays; the rest can be resumed.
    #[error("{0}")]
    Halted(strataflow_operators::model::ModelError),
    /// The log behind the seam ([`crate::log_seam::LogSink`], a
    /// distributed log) refused or failed; what it acknowledged before
    /// stays.
    #[error("{0}")]
    Sink(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// How the ingest runtime itself failed (not the input, not the log).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerFailure {
    /// A worker or the writer thread could not be started.
    #[error("cannot start a thread: {0}")]
    Spawn(#[source] std::io::Error),
    /// A worker thread panicked.
    #[error("a worker panicked")]
    WorkerPanicked,
    /// The writer thread panicked.
    #[error("the writer panicked")]
    WriterPanicked,
    /// The index stage's thread panicked.
    #[error("the index stage panicked")]
    IndexStagePanicked,
    /// The workers stopped while the input was still being fed.
    #[error("the pipeline stopped before the input was consumed")]
    Stopped,
    /// Chunks were sent to workers and never came back.
    #[error("{pending} chunk(s) never completed: a worker stopped early")]
    Incomplete {
        /// Chunks never completed.
        pending: usize,
    },
}

impl From<crate::stage::StageError> for IngestError {
    fn from(e: crate::stage::StageError) -> Self {
        match e {
            crate::stage::StageError::Store(e) => Self::Store(e),
            crate::stage::StageError::Halted(cause) => Self::Halted(cause),
        }
    }
}

fn refusal_text(errors: &[InputError], total: u64) -> String {
    let mut text = format!(
        "refused: {total} invalid input item{}; nothing was stored (use --skip-invalid FILE to store the valid ones)",
        if total == 1 { "" } else { "s" }
    );
    for e in errors {
        text.push_str("\n  ");
        text.push_str(&e.to_string());
    }
    let listed = u64::try_from(errors.len()).unwrap_or(u64::MAX);
    if total > listed {
        text.push_str(&format!("\n  … and {} more", total - listed));
    }
    text
}

/// Counters of an ingest run.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct IngestStats {
    /// What the run is doing: `validate` (the refuse policy's first pass),
    /// `derive` (catching up blocks left underived), `ingest`.
    pub stage: &'static str,
    /// Items the input holds, when known (after the validation pass), else 0.
    pub expected: u64,
    /// Valid messages read in the storing pass.
    pub read: u64,
    /// Messages written.
    pub stored: u64,
    /// Messages already in the log (or repeated in the input), skipped.
    pub already_stored: u64,
    /// Items rejected (quarantine mode).
    pub rejected: u64,
    /// Blocks sealed.
    pub blocks_sealed: u64,
    /// Threads touched.
    pub threads: u64,
    /// Batches committed.
    pub batches: u64,
    /// Block summaries written.
    pub summaries: u64,
    /// Events written.
    pub events: u64,
    /// Graph assertions written.
    pub assertions: u64,
    /// Operator runs that failed (recorded, retried by derivation).
    pub failed_runs: u64,
}

impl IngestStats {
    /// The sum of two sets of counters (the reader's and the writer's).
    pub fn merged(&self, other: &Self) -> Self {
        Self {
            stage: if other.stage.is_empty() {
                self.stage
            } else {
                other.stage
            },
            expected: self.expected.max(other.expected),
            read: self.read + other.read,
            stored: self.stored + other.stored,
            already_stored: self.already_stored + other.already_stored,
            rejected: self.rejected + other.rejected,
            blocks_sealed: self.blocks_sealed + other.blocks_sealed,
            threads: self.threads + other.threads,
            batches: self.batches + other.batches,
            summaries: self.summaries + other.summaries,
            events: self.events + other.events,
            assertions: self.assertions + other.assertions,
            failed_runs: self.failed_runs + other.failed_runs,
        }
    }
}
