//! 128-bit in-memory keys of an input: blake3 (key-derivation mode) of
//! length-prefixed fields, hashed in one update.
//!
//! The runtime's thread keys and the validator's message keys and content
//! fingerprints are such hashes. They live only in the memory of one run
//! (never stored), and blake3 keeps two distinct inputs from sharing a key
//! even when someone chooses the names. The fields are gathered in one
//! buffer first: blake3's cost per `update` call outweighs hashing the few
//! bytes of a name, and the hash of the concatenation is the same.

/// Length-prefixed fields (each: its length as a little-endian `u64`,
/// then its bytes), ready to hash.
pub(crate) struct FieldHash {
    bytes: Vec<u8>,
}

impl FieldHash {
    /// No field yet, with room for `bytes` bytes (8 per field for its
    /// length, then its own); more fields grow the buffer.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
        }
    }

    /// Appends a field.
    pub(crate) fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.bytes
            .extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.bytes.extend_from_slice(bytes);
        self
    }

    /// The first 16 bytes (little-endian) of the fields' hash under
    /// `keyed`, a hasher already set to its derivation context.
    pub(crate) fn hash(&self, keyed: &blake3::Hasher) -> u128 {
        let mut h = keyed.clone();
        h.update(&self.bytes);
        let mut first = [0u8; 16];
        first.copy_from_slice(h.finalize().as_bytes().get(..16).unwrap_or(&[0; 16]));
        u128::from_le_bytes(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-update hash equals the field-by-field one it replaced.
    #[test]
    fn equals_hashing_each_field_in_turn() {
        let keyed = blake3::Hasher::new_derive_key("strataflow field hash test");
        let fields: [&[u8]; 4] = [b"tenant", b"", "thr\u{e9}ad".as_bytes(), &[0, 1, 2]];
        let mut stepwise = keyed.clone();
        let mut gathered = FieldHash::with_capacity(64);
        for f in fields {
            stepwise.update(&(f.len() as u64).to_le_bytes());
            stepwise.update(f);
            gathered.field(f);
        }
        let mut first = [0u8; 16];
        first.copy_from_slice(&stepwise.finalize().as_bytes()[..16]);
        assert_eq!(gathered.hash(&keyed), u128::from_le_bytes(first));
        // A field boundary moved is another key.
        let mut moved = FieldHash::with_capacity(32);
        moved.field(b"ten").field(b"ant");
        let mut whole = FieldHash::with_capacity(16);
        whole.field(b"tenant");
        assert_ne!(moved.hash(&keyed), whole.hash(&keyed));
    }
}
