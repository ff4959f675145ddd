//! Ranges of the numeric arguments every front end (the command line, the
//! HTTP API, the MCP tools) enforces, inclusive.

/// Most hits of a search.
pub const SEARCH_LIMIT: (u64, u64) = (1, 1_000);

/// Word budget of a search, a query diff and an evaluation.
pub const SEARCH_BUDGET: (u64, u64) = (1, 1_000_000);
