//! # strataflow-interchange
//!
//! Comparing and moving what profiles derive (DESIGN.md §7): [`diff`],
//! the difference of two profiles (events only in A, only in B, in both,
//! changed pairs matched by their source messages; graph facts and edges;
//! block summaries), [`export`] (Parquet tables of the records and of a
//! profile's views) and [`import`]. Replay itself is driven from the
//! facade, where the persisted views live. Dependency order:
//! `log ← operators ← materializers ← interchange ← strataflow` (no
//! dependency on the pipeline).

pub mod diff;
pub mod export;
pub mod import;
