//! # strataflow-materializers
//!
//! Views folded from the log (DESIGN.md §5): search indexes, block decay
//! levels, weights, event status and graph state, each with a digest over its
//! canonical content. Views arrive with issue 4; today the log's own indexes
//! (`strataflow-log`) are the only derived state.
