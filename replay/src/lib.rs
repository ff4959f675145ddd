//! # strataflow-replay
//!
//! Comparing and rebuilding what profiles derive (DESIGN.md §7). Today:
//! [`diff`], the event difference of two profiles (only in A, only in B,
//! in both, and changed pairs matched by their source messages). Replay and
//! verification of views arrive with the rest of issue 6; this crate holds
//! its place in the dependency order
//! `log ← operators ← materializers ← pipeline ← replay ← strataflow`.

pub mod diff;
pub mod export;
pub mod import;
