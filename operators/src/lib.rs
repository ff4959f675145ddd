//! # strataflow-operators
//!
//! Deterministic transforms over records: pure functions of their inputs,
//! with no storage and no clock. Same inputs and configuration give the same
//! outputs, byte for byte, on any machine.
//!
//! - [`layers`]: the L4 readable and L3 condensed transcripts of a block (spec §4).
//! - [`sealer`]: cuts a thread's open tail into blocks of N turns.

pub mod layers;
pub mod sealer;
