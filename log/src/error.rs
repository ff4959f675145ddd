//! Errors of the log store.

use std::path::PathBuf;

use crate::envelope::{DecodeError, EncodeError};
use crate::id::RecordId;
use crate::integrity::Damage;

/// Error of a store operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another process holds the data directory.
    #[error(
        "data directory {} is in use by another strataflow process (only one process may open it at a time)",
        path.display()
    )]
    InUse {
        /// The directory.
        path: PathBuf,
    },
    /// The data directory is damaged; nothing in it was changed.
    #[error(
        "data directory {} is damaged: {damage}; it was refused before any record was written (copy what is intact with `strataflow recover {} --to NEW_DIR`)",
        path.display(), path.display()
    )]
    Damaged {
        /// The directory.
        path: PathBuf,
        /// What is damaged.
        damage: Box<Damage>,
    },
    /// The directory was written by another strataflow version: its
    /// manifest has a layout this build cannot read. Nothing in it was
    /// changed (refused before the storage engine opens it).
    #[error(
        "data directory {} was written by a different strataflow version: {file} has layout version {found}, this build reads layout version {supported}; nothing in it was changed",
        path.display()
    )]
    UnsupportedLayout {
        /// The directory.
        path: PathBuf,
        /// The file whose layout is unknown (`strataflow.manifest`).
        file: &'static str,
        /// The layout version found.
        found: u32,
        /// The layout version this build reads.
        supported: u32,
    },
    /// The directory holds no strataflow store (or does not exist).
    #[error(
        "{} (create one with `strataflow init` or by ingesting)",
        if *exists { format!("{} is not a strataflow data directory", path.display()) }
        else { format!("no data directory at {}", path.display()) }
    )]
    NotAStore {
        /// The directory.
        path: PathBuf,
        /// Whether the path exists (as something that is not a store).
        exists: bool,
    },
    /// The storage engine failed.
    #[error("storage error in {}: {source}", path.display())]
    Storage {
        /// The directory.
        path: PathBuf,
        /// fjall's error.
        #[source]
        source: fjall::Error,
    },
    /// A stored value could not be read.
    #[error("record at sequence {seq} cannot be read: {source}")]
    Decode {
        /// Sequence number.
        seq: u64,
        /// Why.
        #[source]
        source: DecodeError,
    },
    /// A record could not be encoded.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// A record cites a parent that is not in the log.
    #[error("{kind} record {id} cites parent {parent}, which is not in the log")]
    MissingParent {
        /// Kind of the citing record.
        kind: &'static str,
        /// The citing record.
        id: RecordId,
        /// The missing parent.
        parent: RecordId,
    },
    /// A different message already has this external id in the thread.
    #[error(
        "message `{external_id}` of thread `{thread}` (tenant `{tenant}`) is already stored with different content (record {existing})"
    )]
    ConflictingMessage {
        /// Tenant.
        tenant: String,
        /// Thread.
        thread: String,
        /// External id.
        external_id: String,
        /// The stored message.
        existing: RecordId,
    },
    /// A record breaks the thread's ordering (position or block ordinal).
    #[error("thread `{thread}` (tenant `{tenant}`): {detail}")]
    ThreadOrder {
        /// Tenant.
        tenant: String,
        /// Thread.
        thread: String,
        /// What is out of order.
        detail: String,
    },
    /// A name is too long for the key layout.
    #[error("{field} is {len} bytes; the limit is {max} bytes")]
    NameTooLong {
        /// Which name.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Records of this kind are not indexed under their parents.
    #[error("records of kind `{kind}` are not indexed under the records they cite")]
    NotIndexedAsChild {
        /// The kind asked for.
        kind: &'static str,
    },
    /// An index entry is malformed (the store is damaged).
    #[error("index `{keyspace}` is damaged: {detail}")]
    Corrupt {
        /// Keyspace.
        keyspace: &'static str,
        /// What is wrong.
        detail: String,
    },
}
