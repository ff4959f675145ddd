//! Search (spec §11): lexical retrieval over events and graph nodes.
//!
//! Everything here is deterministic: no hash-map iteration order reaches a
//! result (maps that are iterated are `BTreeMap`s; results are fully sorted
//! with explicit tie-breaks), and scores are summed in a fixed order.
//!
//! - [`tokenizer`] (§11.1): [`normalize`] (NFKC, lower-case, collapsed
//!   whitespace), [`tokens`] (`word:` tokens from UAX #29 word segments, then
//!   `han1:`/`han2:` Han unigrams/bigrams of maximal Han runs),
//!   [`fuzzy_match`] (equality or substring of normalized texts) and
//!   [`weighted_tokens`] (field tokens repeated by weight). The module docs
//!   describe where UAX #29 differs from ICU's dictionary segmentation.
//! - [`bm25`] (§11.2): [`Bm25Index`], an inverted index with posting lists
//!   sorted by doc, `k1 = 1.2`, `b = 0.75`, `idf = ln(1 + (N − df + 0.5) /
//!   (df + 0.5))`, statistics over the candidate set (all live docs in
//!   [`Bm25Index::search_all`], the filtered ones in [`Bm25Index::search`]),
//!   ties by doc number.
//! - [`rrf`](mod@rrf) (§11.3): reciprocal rank fusion, `Σ weight / (k + rank + 1)`,
//!   `k = 60`, ties by best rank then key; [`rrf_weighted`] skips rankings
//!   weighted `≤ 0`.
//! - [`events`] (§11.4): [`EventIndex`], event search — BM25 over weighted
//!   fields (title 4, summary 3, tags 2, quotes 2, narrative 1, participants
//!   5, event type 5, original time text 4, occurrence dates 4) fused with
//!   structured participant / type / time rankings, with the
//!   exact-intersection, zero-lexical-match and empty-query rules.
//! - [`graph`] (§11.6): [`GraphIndex`], graph node search — pure BM25 over
//!   name 6, aliases 5, tags 5, type 2, current state 4, facts 4, incident
//!   relation labels 3, dropping nodes that match only through relations.
//!
//! Behaviours 12 and 13 of spec §22 are covered by the tests of [`events`]
//! and [`graph`].

pub mod bm25;
pub mod events;
pub mod graph;
pub mod rrf;
pub mod tokenizer;

pub use bm25::{B, Bm25Index, K1};
pub use events::{
    DEFAULT_EVENT_LIMIT, EVENT_FIELD_WEIGHTS, EventDoc, EventIndex, EventQuery, Intent,
    MAX_EVENT_LIMIT, event_fields, event_tokens,
};
pub use graph::{
    DEFAULT_GRAPH_LIMIT, GRAPH_FIELD_WEIGHTS, GraphHit, GraphIndex, MAX_GRAPH_LIMIT, search_graph,
};
pub use rrf::{RRF_K, rrf, rrf_weighted};
pub use tokenizer::{fuzzy_match, normalize, tokens, weighted_tokens};
