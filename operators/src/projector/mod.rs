//! Projectors: events → graph assertions (spec §10).

pub mod heuristic;
