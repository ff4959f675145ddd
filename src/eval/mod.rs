//! Built-in evaluations.
//!
//! - [`locomo`]: retrieval on LoCoMo conversations against gold evidence.
//! - [`gold`]: gold answers of temporal questions as calendar periods.
//! - [`questions`]: question sets (LoCoMo or JSONL) and evidence scoring.
//! - [`query_diff`]: the same questions under two profiles.

pub mod gold;
pub mod locomo;
pub mod query_diff;
pub mod questions;
