//! # strataflow-pipeline
//!
//! The runtime that moves data from sources into the log: readers for the
//! input formats ([`source`]), the ingest driver ([`ingest`]) that validates
//! and feeds the staged runtime ([`runtime`]: partitioned workers that seal
//! and derive, one ordering writer with group commit), batch derivation and
//! its retries ([`derive`](mod@derive)), the streaming ingester ([`stream`]) and the log
//! seam a distributed log plugs into ([`log_seam`]). The
//! model client and recording gateway are in `strataflow-model`.

pub mod commit_observer;
pub mod derive;
mod field_hash;
pub mod ingest;
pub mod ingest_report;
pub mod log_seam;
pub mod runtime;
pub mod source;
pub mod stage;
pub mod stream;
pub mod thread;
mod validator;

/// The pause points for crash tests, defined in `strataflow-log` (feature
/// `failpoints` of this crate turns on that of the log); re-exported so its
/// callers keep their path.
pub use strataflow_log::pause;
