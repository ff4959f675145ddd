//! Record identity: a 32-byte blake3 content hash.

use std::fmt;
use std::str::FromStr;

use rkyv::{Archive, Deserialize, Serialize};

/// The id of a record: blake3 over its domain-separated canonical encoding
/// (see `docs/format.md`, "Hash definition"). Displayed as 64 lowercase hex digits.
#[derive(
    Archive, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default,
)]
#[rkyv(derive(Debug, PartialEq, Eq, PartialOrd, Ord))]
pub struct RecordId(pub [u8; 32]);

impl RecordId {
    /// Length of an id in bytes.
    pub const LEN: usize = 32;

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Builds an id from a slice of exactly 32 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        // default: `None` unless exactly 32 bytes (documented above).
        <[u8; 32]>::try_from(bytes).ok().map(Self)
    }

    /// The id as 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The first 12 hex digits, for human-readable listings.
    pub fn short(&self) -> String {
        let mut s = self.to_hex();
        s.truncate(12);
        s
    }
}

impl From<&ArchivedRecordId> for RecordId {
    fn from(a: &ArchivedRecordId) -> Self {
        Self(a.0)
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordId({})", self.short())
    }
}

/// Error parsing a record id from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a record id: expected 64 hex digits")]
pub struct ParseIdError {
    /// The rejected text.
    pub input: String,
}

impl FromStr for RecordId {
    type Err = ParseIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseIdError {
            input: s.to_owned(),
        };
        let bytes = hex::decode(s.trim()).map_err(|_| err())?;
        Self::from_slice(&bytes).ok_or_else(err)
    }
}

impl serde::Serialize for RecordId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

/// A 32-byte blake3 hash that is not a record id (a config hash, a request hash).
pub type Digest = RecordId;

impl<'de> serde::Deserialize<'de> for RecordId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let id = RecordId([0xab; 32]);
        let text = id.to_hex();
        assert_eq!(text.len(), 64);
        assert_eq!(text.parse::<RecordId>(), Ok(id));
        assert_eq!(id.short(), "abababababab");
    }

    #[test]
    fn rejects_wrong_length_and_non_hex() {
        assert!("abcd".parse::<RecordId>().is_err());
        assert!("zz".repeat(32).parse::<RecordId>().is_err());
    }
}
