//! The canonical, versioned encoding of a record and its content hash.
//!
//! Stored value (the *envelope*):
//!
//! ```text
//! [b'S', b'F'] [kind: u8] [schema version: u16 big-endian] [rkyv body]
//! ```
//!
//! The rkyv body is the archived record struct in the format pinned for the
//! workspace (little-endian, unaligned, 32-bit relative pointers). rkyv does
//! not check schemas, so the header decides whether bytes are readable: an
//! unknown magic, kind or version is a clear [`DecodeError`], never garbage.
//!
//! The record id is `blake3::derive_key(ID_CONTEXT, envelope)`: a
//! domain-separated hash of the exact stored bytes. Parents are fields of the
//! record, so they are part of the id.

use rkyv::rancor;

use crate::id::RecordId;
use crate::record::{
    Assessment, Block, BlockSummary, Derivation, Embedding, Event, Governance, GraphAssertion,
    ImportSource, KeyedMemory, MemoryPurge, Message, ModelCall, Record, RecordKind, Retrieval,
    UseReceipt,
};

/// First two bytes of every stored record.
pub const MAGIC: [u8; 2] = *b"SF";
/// Header length: magic, kind, schema version.
pub const HEADER_LEN: usize = 5;
/// blake3 key-derivation context of record ids (domain separation).
pub const ID_CONTEXT: &str = "strataflow 2026-11-29 record id v1";

/// Why stored bytes could not be read as a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes than a header.
    #[error("value is {len} bytes, shorter than the {HEADER_LEN}-byte header")]
    Truncated {
        /// Length seen.
        len: usize,
    },
    /// Not a strataflow record.
    #[error("bad magic {found:02x?}: not a strataflow record")]
    BadMagic {
        /// Bytes seen.
        found: [u8; 2],
    },
    /// Unknown kind byte.
    #[error("unknown record kind code {code}")]
    UnknownKind {
        /// Code seen.
        code: u8,
    },
    /// A schema version this build cannot read.
    #[error(
        "{kind} record has schema version {found}; this build reads version {supported} (written by a different strataflow version?)"
    )]
    UnsupportedVersion {
        /// Kind.
        kind: &'static str,
        /// Version seen.
        found: u16,
        /// Version supported.
        supported: u16,
    },
    /// The body failed rkyv validation.
    #[error("{kind} record body is invalid: {detail}")]
    InvalidBody {
        /// Kind.
        kind: &'static str,
        /// Validator's message.
        detail: String,
    },
}

/// Error serializing a record (an allocation failure, or an embedding whose
/// vector is not its dimensions).
#[derive(Debug, thiserror::Error)]
#[error("cannot encode {kind} record: {detail}")]
pub struct EncodeError {
    /// Kind.
    pub kind: &'static str,
    /// Serializer's message.
    pub detail: String,
}

/// The envelope of a record: header plus rkyv body.
pub fn encode(record: &Record) -> Result<Vec<u8>, EncodeError> {
    let kind = record.kind();
    let fail = |e: rancor::BoxedError| EncodeError {
        kind: kind.name(),
        detail: e.to_string(),
    };
    let body = match record {
        Record::Message(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::Block(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::BlockSummary(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::Event(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::GraphAssertion(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::Derivation(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::ModelCall(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::Governance(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::Retrieval(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::Assessment(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::UseReceipt(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::ImportSource(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::Embedding(r) => {
            r.check().map_err(|e| EncodeError {
                kind: kind.name(),
                detail: e.to_string(),
            })?;
            rkyv::to_bytes::<rancor::BoxedError>(r)
        }
        Record::KeyedMemory(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
        Record::MemoryPurge(r) => rkyv::to_bytes::<rancor::BoxedError>(r),
    }
    .map_err(fail)?;
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&MAGIC);
    out.push(kind.code());
    out.extend_from_slice(&kind.schema_version().to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// The envelope of an event, byte for byte what [`encode`] gives for
/// `Record::Event(event.clone())`, without the clone (views that keep many
/// events use it).
pub fn encode_event(event: &Event) -> Result<Vec<u8>, EncodeError> {
    let kind = RecordKind::Event;
    let body = rkyv::to_bytes::<rancor::BoxedError>(event).map_err(|e| EncodeError {
        kind: kind.name(),
        detail: e.to_string(),
    })?;
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&MAGIC);
    out.push(kind.code());
    out.extend_from_slice(&kind.schema_version().to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// The id of an envelope.
pub fn id_of(envelope: &[u8]) -> RecordId {
    /// The hasher with the context key derived, once per process (deriving
    /// it hashes the context string: a compression per record, saved).
    static ID_HASHER: std::sync::LazyLock<blake3::Hasher> =
        std::sync::LazyLock::new(|| blake3::Hasher::new_derive_key(ID_CONTEXT));
    let mut h = ID_HASHER.clone();
    h.update(envelope);
    RecordId(*h.finalize().as_bytes())
}

/// Encodes a record and computes its id.
pub fn encode_with_id(record: &Record) -> Result<(RecordId, Vec<u8>), EncodeError> {
    let bytes = encode(record)?;
    Ok((id_of(&bytes), bytes))
}

/// A record with its envelope and id, computed once: the pipeline encodes
/// in its workers and the store appends without encoding again. The fields
/// are private, so the id always belongs to the bytes and the bytes to the
/// record.
#[derive(Clone, Debug)]
pub struct Encoded {
    id: RecordId,
    bytes: Vec<u8>,
    record: Record,
}

impl Encoded {
    /// Encodes a record.
    pub fn new(record: Record) -> Result<Self, EncodeError> {
        let (id, bytes) = encode_with_id(&record)?;
        Ok(Self { id, bytes, record })
    }

    /// The record's id.
    pub fn id(&self) -> RecordId {
        self.id
    }

    /// The envelope.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The record.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// The record, given back.
    pub fn into_record(self) -> Record {
        self.record
    }
}

/// Reads the header: the kind, after checking magic and schema version.
pub fn peek_kind(envelope: &[u8]) -> Result<RecordKind, DecodeError> {
    let (magic, rest) = envelope
        .split_first_chunk::<2>()
        .ok_or(DecodeError::Truncated {
            len: envelope.len(),
        })?;
    if *magic != MAGIC {
        return Err(DecodeError::BadMagic { found: *magic });
    }
    let (&code, rest) = rest.split_first().ok_or(DecodeError::Truncated {
        len: envelope.len(),
    })?;
    let kind = RecordKind::from_code(code).ok_or(DecodeError::UnknownKind { code })?;
    let (version, _) = rest
        .split_first_chunk::<2>()
        .ok_or(DecodeError::Truncated {
            len: envelope.len(),
        })?;
    let found = u16::from_be_bytes(*version);
    if found != kind.schema_version() {
        return Err(DecodeError::UnsupportedVersion {
            kind: kind.name(),
            found,
            supported: kind.schema_version(),
        });
    }
    Ok(kind)
}

/// Decodes an envelope into a record (validating the rkyv body).
pub fn decode(envelope: &[u8]) -> Result<Record, DecodeError> {
    let kind = peek_kind(envelope)?;
    // default: never taken, `peek_kind` read the whole header.
    let body = envelope.get(HEADER_LEN..).unwrap_or_default();
    let fail = |e: rancor::BoxedError| DecodeError::InvalidBody {
        kind: kind.name(),
        detail: e.to_string(),
    };
    Ok(match kind {
        RecordKind::Message => {
            Record::Message(rkyv::from_bytes::<Message, rancor::BoxedError>(body).map_err(fail)?)
        }
        RecordKind::Block => {
            Record::Block(rkyv::from_bytes::<Block, rancor::BoxedError>(body).map_err(fail)?)
        }
        RecordKind::BlockSummary => Record::BlockSummary(
            rkyv::from_bytes::<BlockSummary, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::Event => {
            Record::Event(rkyv::from_bytes::<Event, rancor::BoxedError>(body).map_err(fail)?)
        }
        RecordKind::GraphAssertion => Record::GraphAssertion(
            rkyv::from_bytes::<GraphAssertion, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::Derivation => Record::Derivation(
            rkyv::from_bytes::<Derivation, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::ModelCall => Record::ModelCall(
            rkyv::from_bytes::<ModelCall, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::Governance => Record::Governance(
            rkyv::from_bytes::<Governance, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::Retrieval => Record::Retrieval(
            rkyv::from_bytes::<Retrieval, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::Assessment => Record::Assessment(
            rkyv::from_bytes::<Assessment, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::UseReceipt => Record::UseReceipt(
            rkyv::from_bytes::<UseReceipt, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::ImportSource => Record::ImportSource(
            rkyv::from_bytes::<ImportSource, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::Embedding => {
            let e = rkyv::from_bytes::<Embedding, rancor::BoxedError>(body).map_err(fail)?;
            // A vector whose length is not its dimensions is refused here,
            // not compared later.
            e.check().map_err(|e| DecodeError::InvalidBody {
                kind: kind.name(),
                detail: e.to_string(),
            })?;
            Record::Embedding(e)
        }
        RecordKind::KeyedMemory => Record::KeyedMemory(
            rkyv::from_bytes::<KeyedMemory, rancor::BoxedError>(body).map_err(fail)?,
        ),
        RecordKind::MemoryPurge => Record::MemoryPurge(
            rkyv::from_bytes::<MemoryPurge, rancor::BoxedError>(body).map_err(fail)?,
        ),
    })
}
