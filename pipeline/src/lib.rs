//! # strataflow-pipeline
//!
//! The runtime that moves data from sources into the log: readers for the
//! input formats ([`source`]) and the ingest driver ([`ingest`]) that assigns
//! positions, seals blocks as turns complete and commits in batches.

pub mod derive;
pub mod ingest;
pub mod source;
pub mod synthetic;
