//! # strataflow-materializers
//!
//! Views folded from the log (DESIGN.md §5). Each view is a deterministic
//! fold: the same records give the same view whatever order the log holds
//! them in.
//!
//! - [`block_levels`]: decayed detail level of every ready block.
//! - [`event_status`]: active / superseded / forgotten per event, from events
//!   and governance records, plus pins and conflicts.
//! - [`view`]: persisted incremental views (state + last sequence) and their digests.
//! - [`weights`]: use-only reinforcement per event.
//! - [`search`]: tokenizer, BM25, RRF, the event and graph-node searches.
//! - [`snapshot`]: the binary encoding of persisted search snapshots.
//! - [`keyed_memory`]: the keyed memories of a tenant (current entry per
//!   namespace and key, its vectors per label) and the exact cosine recall.
//! - [`vector`]: exact and approximate (HNSW) top-k cosine over one label's vectors.
//! - [`graph_state`]: current and historical nodes, facts and edges folded
//!   from graph assertions.

pub mod block_levels;
pub mod dense_view;
pub mod event_status;
pub mod graph_state;
pub mod keyed_memory;
pub mod search;
pub mod snapshot;
pub mod vector;
pub mod view;
pub mod weights;
