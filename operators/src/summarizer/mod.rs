//! Summarizers: L0 title and tags, L1 summary, L2 key points and
//! should_extract for a sealed block (spec §5).

pub mod heuristic;

pub use heuristic::HeuristicSummarizer;
