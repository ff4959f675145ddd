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
        /// What is wrong.
        what: String,
    },
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
    pub fn invalid(&self, what: impl Into<String>) -> SnapshotError {
        SnapshotError::Invalid {
            at: self.pos,
            what: what.into(),
        }
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
                return Err(self.invalid("varint overflows 64 bits"));
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.invalid("varint longer than 10 bytes"))
    }

    /// A varint that fits a `u32`.
    pub fn u32(&mut self) -> Result<u32, SnapshotError> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| self.invalid(format!("{v} does not fit 32 bits")))
    }

    /// A count of items that take at least `min_item_bytes` each: never more
    /// than the bytes left could hold, so garbage cannot ask for a huge
    /// allocation.
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize, SnapshotError> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| self.invalid(format!("count {n} too large")))?;
        if n.saturating_mul(min_item_bytes.max(1)) > self.remaining() {
            return Err(self.invalid(format!(
                "count {n} exceeds the {} bytes left",
                self.remaining()
            )));
        }
        Ok(n)
    }

    /// A float from its bits.
    pub fn f64(&mut self) -> Result<f64, SnapshotError> {
        let b = self.raw(8)?;
        let bits: [u8; 8] = b.try_into().map_err(|_| self.invalid("float"))?;
        Ok(f64::from_bits(u64::from_le_bytes(bits)))
    }

    /// A byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], SnapshotError> {
        let n = self.count(1)?;
        self.raw(n)
    }

    /// A UTF-8 string.
    pub fn str(&mut self) -> Result<&'a str, SnapshotError> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| self.invalid("string is not UTF-8"))
    }

    /// An owned UTF-8 string.
    pub fn string(&mut self) -> Result<String, SnapshotError> {
        self.str().map(str::to_owned)
    }

    /// A record id.
    pub fn id(&mut self) -> Result<RecordId, SnapshotError> {
        let b = self.raw(32)?;
        RecordId::from_slice(b).ok_or_else(|| self.invalid("record id"))
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> Result<(), SnapshotError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(self.invalid(format!("{} bytes left over", self.remaining())))
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
}
