//! Built-in evaluations.
//!
//! - [`locomo`]: retrieval on LoCoMo conversations against gold evidence.
//! - [`gold`]: gold answers of temporal questions as calendar periods.

pub mod gold;
pub mod locomo;
