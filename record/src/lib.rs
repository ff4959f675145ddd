//! # strataflow-record
//!
//! What a record is, with no storage: the record types, their canonical
//! envelope encoding (rkyv, format features pinned in the workspace) and
//! content-hashed ids, canonical JSON and source time. `strataflow-log`
//! stores these in fjall and re-exports this crate's modules under the same
//! paths; the pure crates (`operators`, `materializers`) depend on this crate
//! only, so they do not compile the store.
//!
//! Invariant this crate keeps (pinned by `tests/golden_ids.rs`): a record's id
//! is the blake3 hash of its canonical envelope, parents included.

pub mod envelope;
pub mod id;
pub mod json;
pub mod record;
pub mod time;

pub use envelope::{DecodeError, EncodeError};
pub use id::{Digest, ParseIdError, RecordId};
pub use record::{Record, RecordKind};
pub use time::{SourceTime, Timestamp};
