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
        /// What is out of order, with the numbers involved.
        detail: ThreadOrderProblem,
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
        /// What is wrong, with the lengths, sequences and ids involved.
        detail: Corruption,
    },
}

/// How a record breaks its thread's order ([`StoreError::ThreadOrder`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ThreadOrderProblem {
    /// A message's position is not the thread's next one.
    #[error("message `{external_id}` has position {position}, expected {expected}")]
    MessagePosition {
        /// The message's external id.
        external_id: String,
        /// Its position.
        position: u64,
        /// The thread's next position.
        expected: u64,
    },
    /// A block does not continue the thread's blocks (ordinal, positions
    /// or turns).
    #[error(
        "block {ordinal} covers positions {first_position}..={last_position} and turns {start_turn}..={end_turn}; expected block {expected_ordinal} from position {expected_first_position} (of {messages} messages) and turn {expected_start_turn}"
    )]
    Block {
        /// The block's ordinal.
        ordinal: u32,
        /// Its first message position.
        first_position: u64,
        /// Its last message position.
        last_position: u64,
        /// Its first turn.
        start_turn: u32,
        /// Its last turn.
        end_turn: u32,
        /// The ordinal the thread expects next.
        expected_ordinal: u32,
        /// The first position the thread expects next (its sealed messages).
        expected_first_position: u64,
        /// Messages the thread holds.
        messages: u64,
        /// The turn the thread expects next.
        expected_start_turn: u32,
    },
}

/// An index or counter entry that names a record ([`Corruption`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexEntry {
    /// The id index entry of a record.
    Id(RecordId),
    /// The model-call index entry of a request hash.
    Request(crate::Digest),
}

impl std::fmt::Display for IndexEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Id(id) => write!(f, "{id}"),
            Self::Request(hash) => write!(f, "request {hash}"),
        }
    }
}

/// What is malformed in a keyspace ([`StoreError::Corrupt`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// The first key of the records keyspace is not a sequence number.
    #[error("first key {key:02x?} is not a sequence number")]
    FirstKey {
        /// The key's bytes.
        key: Vec<u8>,
    },
    /// The index watermark (`meta` key `index/watermark`) is not 8 bytes.
    #[error("index watermark of {len} bytes")]
    Watermark {
        /// The value's length.
        len: usize,
    },
    /// A key of the records keyspace is not a sequence number.
    #[error("key of {len} bytes")]
    RecordKey {
        /// The key's length.
        len: usize,
    },
    /// An index value that should be a sequence number is not 8 bytes.
    #[error("sequence of {len} bytes for {entry}")]
    SeqValue {
        /// The entry.
        entry: IndexEntry,
        /// The value's length.
        len: usize,
    },
    /// An index entry points at a sequence that holds no record.
    #[error("{entry} points at sequence {seq}, which is empty")]
    EmptySeq {
        /// The entry.
        entry: IndexEntry,
        /// The sequence it points at.
        seq: u64,
    },
    /// A model-call index entry points at a record that is not its call.
    #[error(
        "{entry} points at sequence {seq}, which holds a {kind} record, not this request's model call"
    )]
    WrongRecord {
        /// The entry.
        entry: IndexEntry,
        /// The sequence it points at.
        seq: u64,
        /// The kind of record found there.
        kind: &'static str,
    },
    /// A thread head value cannot be decoded.
    #[error("head value of {len} bytes")]
    HeadValue {
        /// The value's length.
        len: usize,
    },
    /// An external-id index value is not a record id.
    #[error("id of {len} bytes")]
    IdValue {
        /// The value's length.
        len: usize,
    },
    /// An index entry whose key does not fit the key layout.
    #[error("entry with {len}-byte key")]
    EntryKey {
        /// The key's length.
        len: usize,
    },
    /// An index entry whose value does not fit the value layout.
    #[error("entry with {len}-byte value")]
    EntryValue {
        /// The value's length.
        len: usize,
    },
    /// A kind counter is not 8 bytes.
    #[error("the `{kind}` counter is {len} bytes, not 8")]
    Counter {
        /// The kind counted.
        kind: &'static str,
        /// The value's length.
        len: usize,
    },
    /// A view state too large for the chunk layout.
    #[error("state of view `{view}` is too large ({len} bytes)")]
    ViewTooLarge {
        /// The view.
        view: String,
        /// The state's length.
        len: usize,
    },
    /// The head of a chunked view state has the wrong length.
    #[error("head of chunked view `{view}` is {len} bytes, not {expected}")]
    ViewHead {
        /// The view.
        view: String,
        /// The head's length.
        len: usize,
        /// The head layout's length.
        expected: usize,
    },
    /// A view head claims more bytes than this machine can address.
    #[error("view `{view}` claims {total} bytes")]
    ViewTotal {
        /// The view.
        view: String,
        /// The length claimed.
        total: u64,
    },
    /// A view head's chunk count does not fit its length.
    #[error("view `{view}` has {count} chunks for {total} bytes")]
    ViewChunkCount {
        /// The view.
        view: String,
        /// Chunks the head lists.
        count: u32,
        /// Bytes the head lists.
        total: usize,
    },
    /// A chunk the view head lists is absent.
    #[error("view `{view}` lacks chunk {index} of {count}")]
    ViewChunkMissing {
        /// The view.
        view: String,
        /// The missing chunk.
        index: u32,
        /// Chunks the head lists.
        count: u32,
    },
    /// The chunks hold another length than the head lists.
    #[error("view `{view}` has {found} bytes in its chunks, not {total}")]
    ViewLength {
        /// The view.
        view: String,
        /// Bytes found.
        found: usize,
        /// Bytes the head lists.
        total: usize,
    },
}
