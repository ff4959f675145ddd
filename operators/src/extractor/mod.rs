//! Extractors: event cards from one sealed block (spec §7), with the
//! temporal resolver that turns time expressions into intervals.

pub mod heuristic;
pub mod temporal;

pub use heuristic::HeuristicExtractor;
