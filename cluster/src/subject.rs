//! Subjects and partitions of the raw-message stream, and the subjects of
//! the model-call stream.
//!
//! A raw message goes to `<prefix>.l5.<partition>.<tenant>.<thread>`. The
//! tenant and thread are escaped into subject tokens ([`escape_token`]);
//! the partition is a stable hash of the tenant modulo the stream's
//! partition count ([`partition_of`]), fixed when the stream is created
//! and read back from its metadata ([`PARTITIONS_KEY`]) ever after. A
//! recorded model call goes to `<prefix>.calls.<request hash>` (64
//! lower-case hex digits) in the stream `<prefix>_calls`.

/// The stream metadata key holding the partition count.
pub const PARTITIONS_KEY: &str = "strataflow.partitions";

/// The subject-hash context of [`partition_of`]; changing it moves every
/// tenant, so it is versioned.
const PARTITION_CONTEXT: &str = "strataflow cluster tenant partition v1";

/// Escapes a name into one subject token: ASCII letters, digits and `-`
/// stay; every other byte (`.`, `*`, `>`, spaces, `_` itself, non-ASCII
/// UTF-8 bytes) becomes `_` and two upper-case hex digits; the empty name
/// (the default tenant) is `_`. The mapping is injective, so distinct
/// names never share a subject.
pub fn escape_token(name: &str) -> String {
    if name.is_empty() {
        return "_".to_owned();
    }
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    out
}

/// The partition of a tenant: the first eight bytes of a keyed blake3
/// hash of its name, little-endian, modulo `partitions` (at least 1).
pub fn partition_of(tenant: &str, partitions: u32) -> u32 {
    let hash = blake3::derive_key(PARTITION_CONTEXT, tenant.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(hash.get(..8).unwrap_or(&[0; 8]));
    let n = u64::from(partitions.max(1));
    // default: the remainder of a division by a u32 fits a u32.
    u32::try_from(u64::from_le_bytes(first) % n).unwrap_or(0)
}

/// The subjects of one stream prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subjects {
    prefix: String,
}

impl Subjects {
    /// Subjects under `prefix` (one token: ASCII letters, digits, `-`, `_`).
    pub fn new(prefix: &str) -> Result<Self, crate::ClusterError> {
        if prefix.is_empty()
            || !prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(crate::ClusterError::Prefix {
                prefix: prefix.to_owned(),
            });
        }
        Ok(Self {
            prefix: prefix.to_owned(),
        })
    }

    /// The raw-message stream's name.
    pub fn stream(&self) -> String {
        format!("{}_l5", self.prefix)
    }

    /// Every subject of the raw-message stream.
    pub fn all(&self) -> String {
        format!("{}.l5.>", self.prefix)
    }

    /// The subjects of one partition.
    pub fn partition(&self, partition: u32) -> String {
        format!("{}.l5.{partition}.>", self.prefix)
    }

    /// The subject of one thread.
    pub fn thread(&self, partitions: u32, tenant: &str, thread: &str) -> String {
        format!(
            "{}.l5.{}.{}.{}",
            self.prefix,
            partition_of(tenant, partitions),
            escape_token(tenant),
            escape_token(thread)
        )
    }

    /// The model-call stream's name.
    pub fn calls_stream(&self) -> String {
        format!("{}_calls", self.prefix)
    }

    /// Every subject of the model-call stream.
    pub fn all_calls(&self) -> String {
        format!("{}.calls.*", self.prefix)
    }

    /// The subject of the model call for a request hash.
    pub fn call(&self, request_hash: &strataflow_log::Digest) -> String {
        format!("{}.calls.{request_hash}", self.prefix)
    }

    /// The durable consumer of a partition.
    pub fn consumer(&self, partition: u32) -> String {
        format!("{}_l5_p{partition}", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn tokens_are_escaped_injectively() {
        assert_eq!(escape_token(""), "_");
        assert_eq!(escape_token("acme-1"), "acme-1");
        assert_eq!(escape_token("a.b"), "a_2Eb");
        assert_eq!(escape_token("a_2Eb"), "a_5F2Eb");
        assert_eq!(escape_token("*>"), "_2A_3E");
        assert_eq!(escape_token("é"), "_C3_A9");
        assert_ne!(escape_token("_"), escape_token(""));
    }

    #[test]
    fn partitions_are_stable_and_in_range() {
        // Fixed values: a change here moves every tenant of every stream.
        let first: Vec<u32> = ["", "t1", "t2", "acme"]
            .iter()
            .map(|t| partition_of(t, 8))
            .collect();
        assert_eq!(first, [1, 4, 2, 1]);
        for t in 0..100 {
            assert!(partition_of(&format!("t{t}"), 7) < 7);
        }
        assert_eq!(partition_of("x", 1), 0);
        let s = Subjects::new("sf").unwrap();
        assert!(s.thread(4, "a.b", "c d").ends_with(".a_2Eb.c_20d"));
        assert!(Subjects::new("a.b").is_err());
        let hash = strataflow_log::RecordId([0xab; 32]);
        assert_eq!(s.call(&hash), format!("sf.calls.{}", "ab".repeat(32)));
        assert_eq!(s.calls_stream(), "sf_calls");
    }
}
