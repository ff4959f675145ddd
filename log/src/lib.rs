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
//! - the log is keyed by a contiguous big-endian sequence number; the id index,
//!   per-kind, per-thread and external-id indexes are written in the same atomic
//!   batch as the records;
//! - every parent a record cites is already in the log when it is appended;
//! - messages of a thread have contiguous positions and an external id maps to
//!   one message only.
//!
//! **Only this crate touches fjall.**

pub use strataflow_record::{envelope, id, json, record, time};

pub mod audit;
pub mod error;
mod head;
pub mod integrity;
mod keys;
pub mod pause;
mod recent;
pub mod recover;
pub mod store;

pub use audit::{AuditProblem, AuditReport};
pub use envelope::{DecodeError, EncodeError};
pub use error::{Corruption, IndexEntry, StoreError, ThreadOrderProblem};
pub use id::{Digest, ParseIdError, RecordId};
pub use integrity::journal::EntryError as JournalEntryError;
pub use integrity::{
    Damage, Inconsistency, JournalProblem, ManifestDamage, TableCheck, TableProblem,
};
pub use keys::MAX_NAME_BYTES;
pub use record::{Record, RecordKind};
pub use store::{AppendReceipt, Appended, Durability, Store, StoredRecord, ThreadHead};
pub use time::{SourceTime, Timestamp};
