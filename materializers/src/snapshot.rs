//! A compact binary encoding for persisted view snapshots (the search
//! indexes): unsigned integers as LEB128 varints, floats as their IEEE 754
//! bits (8 bytes, little-endian), record ids as their 32 bytes, strings and
//! byte strings as a varint length then the bytes.
//!
//! The encoding carries no schema: whoever writes a snapshot leads it with a
//! format version and checks it before decoding. [`Decoder`] never panics
//! and never allocates more than the input could hold: every count is
//! checked against the bytes left, and any short or malformed input is a
//! [`SnapshotError`].

use strataflow_record::RecordId;

/// Why snapshot bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The bytes end before the value does.
    #[error("snapshot truncated at byte {at}")]
    Truncated {
        /// Offset reached.
        at: usize,
    },
    /// A value is out of range or inconsistent with the rest.
    #[error("snapshot invalid at byte {at}: {what}")]
    Invalid {
        /// Offset reached.
        at: usize,
        /// What is wrong, with the numbers involved.
        what: SnapshotProblem,
    },
}

/// What is wrong with a snapshot value ([`SnapshotError::Invalid`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotProblem {
    /// A varint's tenth byte carries more than the 64th bit.
    #[error("varint overflows 64 bits")]
    VarintOverflow,
    /// A varint does not end within 10 bytes.
    #[error("varint longer than 10 bytes")]
    VarintTooLong,
    /// A value read as a `u32` is larger.
    #[error("{value} does not fit 32 bits")]
    NotU32 {
        /// The value read.
        value: u64,
    },
    /// A count does not fit a `usize`.
    #[error("count {count} too large")]
    CountTooLarge {
        /// The count read.
        count: u64,
    },
    /// A count of items more than the bytes left could hold.
    #[error("count {count} exceeds the {left} bytes left")]
    CountExceedsBytes {
        /// The count read.
        count: usize,
        /// Bytes left in the snapshot.
        left: usize,
    },
    /// A string is not UTF-8.
    #[error("string is not UTF-8")]
    NotUtf8,
    /// Bytes are left after the last value.
    #[error("{left} bytes left over")]
    LeftOver {
        /// Bytes not read.
        left: usize,
    },
    /// A table has more rows than its `u32` row numbers can name.
    #[error("too many {table}")]
    TooManyRows {
        /// The table (`threads`, `terms`).
        table: &'static str,
        /// The row number that does not fit.
        row: usize,
    },
    /// A name is listed twice in a table of unique names.
    #[error("{table} repeated")]
    Repeated {
        /// The table (`thread`, `term`).
        table: &'static str,
        /// The repeated name.
        name: String,
    },
    /// An event's bytes hold another kind of record.
    #[error("{kind} record where an event was")]
    NotAnEvent {
        /// The kind found.
        kind: &'static str,
    },
    /// An event's bytes cannot be decoded.
    #[error("event {id}: {error}")]
    Event {
        /// The event's id.
        id: strataflow_record::RecordId,
        /// Why it cannot be decoded.
        error: strataflow_record::envelope::DecodeError,
    },
    /// An event status code is unknown.
    #[error("event status")]
    EventStatus {
        /// The code read.
        code: u8,
    },
    /// An event's doc number does not fit 32 bits.
    #[error("doc number")]
    DocNumber {
        /// The value read (doc number + 1).
        value: u64,
    },
    /// A forgotten or removed event has a BM25 doc.
    #[error("forgotten or removed event in BM25")]
    HiddenEventIndexed {
        /// The event.
        id: strataflow_record::RecordId,
    },
    /// An event is listed twice.
    #[error("event {id} repeated")]
    EventRepeated {
        /// The event.
        id: strataflow_record::RecordId,
    },
    /// An indexed event's thread is not in the thread table.
    #[error("indexed event of an unknown thread")]
    UnknownThread {
        /// The thread.
        thread: String,
    },
    /// An event's doc is not live, or is another event's too.
    #[error("doc {doc} is not one live doc of one event")]
    NotOneLiveDoc {
        /// The doc number.
        doc: u32,
    },
    /// The BM25 index has live docs that no event claims.
    #[error("live docs without an event")]
    UnclaimedDocs {
        /// Live docs in the index.
        live: usize,
        /// Docs events claim.
        claimed: usize,
    },
    /// Removed doc numbers do not ascend strictly.
    #[error("removed docs not ascending")]
    RemovedNotAscending {
        /// The removed doc before the repeated one.
        after: u32,
    },
    /// A removed doc number overflows 32 bits.
    #[error("removed doc overflows")]
    RemovedOverflows {
        /// The removed doc before.
        after: u32,
        /// The delta that overflows.
        delta: u32,
    },
    /// A removed doc is not a doc of the index.
    #[error("removed doc {doc} unknown")]
    RemovedUnknown {
        /// The doc number.
        doc: u32,
        /// Docs in the index.
        docs: usize,
    },
    /// More removals await compaction than docs are removed.
    #[error("more pending removals than removed docs")]
    PendingRemovals {
        /// Pending removals.
        pending: usize,
        /// Removed docs.
        removed: usize,
    },
    /// A term's postings do not ascend strictly by doc.
    #[error("postings not sorted by doc")]
    PostingsNotSorted {
        /// The doc before the repeated one.
        after: u32,
    },
    /// A posting's doc number overflows 32 bits.
    #[error("posting doc overflows")]
    PostingOverflows {
        /// The doc before.
        after: u32,
        /// The delta that overflows.
        delta: u32,
    },
    /// A posting names a doc the index does not have.
    #[error("posting of unknown doc {doc}")]
    PostingUnknownDoc {
        /// The doc number.
        doc: u32,
        /// Docs in the index.
        docs: usize,
    },
    /// A compacted index still has a posting of a removed doc.
    #[error("posting of a removed doc after compaction")]
    PostingOfRemovedDoc {
        /// The doc number.
        doc: u32,
    },
    /// A graph node type rank is unknown.
    #[error("node type {rank}")]
    NodeType {
        /// The rank read.
        rank: u8,
    },
    /// The graph's nodes and its BM25 docs do not correspond one to one.
    #[error("graph nodes and BM25 docs differ")]
    GraphDocs {
        /// Nodes.
        nodes: usize,
        /// Docs in the index.
        docs: usize,
        /// Live docs in the index.
        live: usize,
    },
    /// What a snapshot's owner outside this crate found wrong with its own
    /// tables (its header, its checksum): the text it gave.
    #[error("{0}")]
    Other(String),
}

impl From<String> for SnapshotProblem {
    fn from(text: String) -> Self {
        Self::Other(text)
    }
}

impl From<&str> for SnapshotProblem {
    fn from(text: &str) -> Self {
        Self::Other(text.to_owned())
    }
}

/// Writes a snapshot.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// An empty encoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// One byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// An unsigned integer as a LEB128 varint (1 byte below 128).
    pub fn u64(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// A `u32` as a varint.
    pub fn u32(&mut self, v: u32) {
        self.u64(u64::from(v));
    }

    /// A length or count as a varint.
    pub fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }

    /// A float as its bits, little-endian (exact, NaN payloads included).
    pub fn f64(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_bits().to_le_bytes());
    }

    /// Raw bytes, no length.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// A byte string: length, then bytes.
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.len(bytes.len());
        self.buf.extend_from_slice(bytes);
    }

    /// A UTF-8 string: length, then bytes.
    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    /// A record id: its 32 bytes.
    pub fn id(&mut self, id: &RecordId) {
        self.buf.extend_from_slice(id.as_bytes());
    }

    /// The bytes written.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads a snapshot written by [`Encoder`].
#[derive(Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// Reads `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// An error at the current offset.
    pub fn invalid(&self, what: impl Into<SnapshotProblem>) -> SnapshotError {
        SnapshotError::Invalid {
            at: self.pos,
            what: what.into(),
        }
    }

    /// The next `N` bytes, as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], SnapshotError> {
        let out = self
            .buf
            .get(self.pos..)
            .and_then(<[u8]>::first_chunk::<N>)
            .copied()
            .ok_or(SnapshotError::Truncated { at: self.pos })?;
        self.pos += N;
        Ok(out)
    }

    /// The next `n` bytes.
    pub fn raw(&mut self, n: usize) -> Result<&'a [u8], SnapshotError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(SnapshotError::Truncated { at: self.pos })?;
        let out = self
            .buf
            .get(self.pos..end)
            .ok_or(SnapshotError::Truncated { at: self.pos })?;
        self.pos = end;
        Ok(out)
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, SnapshotError> {
        let b = self
            .buf
            .get(self.pos)
            .copied()
            .ok_or(SnapshotError::Truncated { at: self.pos })?;
        self.pos += 1;
        Ok(b)
    }

    /// A varint.
    pub fn u64(&mut self) -> Result<u64, SnapshotError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(self.invalid(SnapshotProblem::VarintOverflow));
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.invalid(SnapshotProblem::VarintTooLong))
    }

    /// A varint that fits a `u32`.
    pub fn u32(&mut self) -> Result<u32, SnapshotError> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| self.invalid(SnapshotProblem::NotU32 { value: v }))
    }

    /// A count of items that take at least `min_item_bytes` each: never more
    /// than the bytes left could hold, so garbage cannot ask for a huge
    /// allocation.
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize, SnapshotError> {
        let n = self.u64()?;
        let n = usize::try_from(n)
            .map_err(|_| self.invalid(SnapshotProblem::CountTooLarge { count: n }))?;
        if n.saturating_mul(min_item_bytes.max(1)) > self.remaining() {
            return Err(self.invalid(SnapshotProblem::CountExceedsBytes {
                count: n,
                left: self.remaining(),
            }));
        }
        Ok(n)
    }

    /// A float from its bits.
    pub fn f64(&mut self) -> Result<f64, SnapshotError> {
        Ok(f64::from_bits(u64::from_le_bytes(self.array()?)))
    }

    /// A byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], SnapshotError> {
        let n = self.count(1)?;
        self.raw(n)
    }

    /// A UTF-8 string.
    pub fn str(&mut self) -> Result<&'a str, SnapshotError> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| self.invalid(SnapshotProblem::NotUtf8))
    }

    /// An owned UTF-8 string.
    pub fn string(&mut self) -> Result<String, SnapshotError> {
        self.str().map(str::to_owned)
    }

    /// A record id.
    pub fn id(&mut self) -> Result<RecordId, SnapshotError> {
        self.array().map(RecordId)
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> Result<(), SnapshotError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(self.invalid(SnapshotProblem::LeftOver {
                left: self.remaining(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let mut e = Encoder::new();
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            e.u64(v);
        }
        e.f64(-0.0);
        e.f64(f64::NAN);
        e.str("héllo");
        e.id(&RecordId([7; 32]));
        let bytes = e.finish();
        let mut d = Decoder::new(&bytes);
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(d.u64().unwrap(), v);
        }
        assert_eq!(d.f64().unwrap().to_bits(), (-0.0f64).to_bits());
        assert_eq!(d.f64().unwrap().to_bits(), f64::NAN.to_bits());
        assert_eq!(d.str().unwrap(), "héllo");
        assert_eq!(d.id().unwrap(), RecordId([7; 32]));
        d.finish().unwrap();
        // A huge count is refused before any allocation.
        let mut e = Encoder::new();
        e.u64(u64::MAX >> 1);
        let bytes = e.finish();
        assert!(Decoder::new(&bytes).count(1).is_err());
        assert!(Decoder::new(&[0xff; 11]).u64().is_err());
        assert!(Decoder::new(&[3, b'a']).str().is_err());
    }

    #[test]
    fn invalid_values_carry_their_numbers_with_the_same_messages() {
        let invalid = |bytes: &[u8], read: fn(&mut Decoder<'_>) -> Result<(), SnapshotError>| {
            read(&mut Decoder::new(bytes)).unwrap_err()
        };
        let err = invalid(&[5, b'a'], |d| d.count(1).map(drop));
        assert_eq!(
            err,
            SnapshotError::Invalid {
                at: 1,
                what: SnapshotProblem::CountExceedsBytes { count: 5, left: 1 },
            }
        );
        assert_eq!(
            err.to_string(),
            "snapshot invalid at byte 1: count 5 exceeds the 1 bytes left"
        );
        let mut e = Encoder::new();
        e.u64(u64::from(u32::MAX) + 1);
        let err = invalid(&e.finish(), |d| d.u32().map(drop));
        assert!(
            matches!(&err, SnapshotError::Invalid { what: SnapshotProblem::NotU32 { value }, .. } if *value == 1 << 32),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "snapshot invalid at byte 5: 4294967296 does not fit 32 bits"
        );
        let err = invalid(&[0xff; 11], |d| d.u64().map(drop));
        assert_eq!(
            err.to_string(),
            "snapshot invalid at byte 10: varint overflows 64 bits"
        );
        let err = invalid(&[0, 7, 7], |d| d.finish());
        assert_eq!(
            err,
            SnapshotError::Invalid {
                at: 0,
                what: SnapshotProblem::LeftOver { left: 3 },
            }
        );
        assert_eq!(
            err.to_string(),
            "snapshot invalid at byte 0: 3 bytes left over"
        );
        // A short id or float is truncated, never invalid.
        assert_eq!(
            invalid(&[7; 31], |d| d.id().map(drop)),
            SnapshotError::Truncated { at: 0 }
        );
        assert_eq!(
            invalid(&[7; 7], |d| d.f64().map(drop)),
            SnapshotError::Truncated { at: 0 }
        );
        // A facade's own check keeps its text.
        assert_eq!(
            Decoder::new(&[]).invalid("checksum mismatch").to_string(),
            "snapshot invalid at byte 0: checksum mismatch"
        );
    }
}
