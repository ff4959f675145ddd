//! # strataflow-log
//!
//! The append-only log of strataflow, stored in fjall. The record types, their
//! canonical encoding and content hashes live in `strataflow-record`; this
//! crate re-exports its modules under the same paths (`strataflow_log::record`,
//! `envelope`, `id`, `time`, `json`).
//!
//! Invariants this crate keeps (each has a test):
//! - a record's id is the blake3 hash of its canonical envelope (parents are
//!   fields, so part of the id); appending a record whose id exists writes nothing;
//! - the log is keyed by a contiguous big-endian sequence number; a record's
//!   commit batch holds it, the thread heads and the kind counters; the id,
//!   per-kind, per-thread, children, external-id and model-call indexes are
//!   views of the records written by the index stage ([`index`]) with their
//!   watermark in the same batch, and equal a rebuild from the records once
//!   caught up (on open, before a scan of an index, on drop);
//! - every parent a record cites is already in the log when it is appended;
//! - messages of a thread have contiguous positions and an external id maps to
//!   one message only.
//!
//! **Only this crate touches fjall.**

pub use strataflow_record::{envelope, id, json, record, time};

pub mod audit;
pub mod error;
mod head;
pub mod index;
pub mod integrity;
mod keys;
mod merger;
pub mod pause;
mod recent;
pub mod recover;
pub mod store;

pub use audit::{AuditProblem, AuditReport, IndexCheck};
pub use envelope::{DecodeError, EncodeError};
pub use error::{Corruption, IndexEntry, StoreError, ThreadOrderProblem};
pub use id::{Digest, ParseIdError, RecordId};
pub use integrity::journal::EntryError as JournalEntryError;
pub use integrity::{
    Damage, Inconsistency, JournalProblem, ManifestDamage, TableCheck, TableProblem,
};
pub use keys::MAX_NAME_BYTES;
pub use record::{Record, RecordKind};
pub use store::{
    AppendReceipt, Appended, Durability, IndexStage, Store, StoredRecord, ThreadHead, segment_name,
};
pub use time::{SourceTime, Timestamp};
