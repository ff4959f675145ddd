//! # strataflow-replay
//!
//! Rebuilds views from L5 under an operator profile, diffs two profiles and
//! verifies a rebuild equals the live views (DESIGN.md §7). Replay arrives
//! with issue 6; this crate holds its place in the dependency order
//! `log ← operators ← materializers ← pipeline ← replay ← strataflow`.
