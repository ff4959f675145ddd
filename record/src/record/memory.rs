//! Vectors and keyed memories (seed 002): an [`Embedding`] is the vector an
//! embedder made of one record's text; a [`KeyedMemory`] remembers or
//! forgets one key `(namespace, key)` of a tenant; a [`MemoryPurge`] drops
//! the entries last written before a cutoff. Times are the caller's (the
//! command line passes the current time, tests fixed ones), never read from
//! a clock here.

use rkyv::{Archive, Deserialize, Serialize};

use crate::id::{Digest, RecordId};
use crate::time::Timestamp;

/// Why an [`Embedding`] is not well formed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbeddingError {
    /// The vector's byte length is not `4 × dimensions`.
    #[error("embedding of {label}: {bytes} vector bytes, expected {dimensions} × 4")]
    Length {
        /// The label.
        label: String,
        /// Its dimensions.
        dimensions: u32,
        /// The vector's length in bytes.
        bytes: usize,
    },
    /// A value is a NaN or an infinity.
    #[error("embedding of {label}: value {index} is not finite")]
    NotFinite {
        /// The label.
        label: String,
        /// The value's position.
        index: usize,
    },
}

/// One vector: what an embedder (`operator`, `config_hash`) made of the text
/// of `source`, in the space `label` of `dimensions`. The vector is stored
/// as f32 little-endian bytes, so its id never depends on float printing.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct Embedding {
    /// Tenant of the source.
    pub tenant: String,
    /// The label's name, `<provider>/<model>`.
    pub label: String,
    /// The label's dimensions: the vector holds exactly this many values.
    pub dimensions: u32,
    /// The values, 4 bytes each, little-endian IEEE 754 binary32 (in JSON,
    /// a list of numbers).
    #[serde(serialize_with = "values_json")]
    pub vector: Vec<u8>,
    /// The record whose text this embeds.
    pub source: RecordId,
    /// The embedder, `name@version`.
    pub operator: String,
    /// Hash of the embedder's configuration.
    pub config_hash: Digest,
}

impl Embedding {
    /// An embedding of `values`, refused when any value is not finite.
    ///
    /// # Errors
    /// [`EmbeddingError::NotFinite`] naming the first bad value.
    pub fn new(
        tenant: &str,
        label: &str,
        values: &[f32],
        source: RecordId,
        operator: &str,
        config_hash: Digest,
    ) -> Result<Self, EmbeddingError> {
        let mut vector = Vec::with_capacity(values.len() * 4);
        for v in values {
            vector.extend_from_slice(&v.to_le_bytes());
        }
        let e = Self {
            tenant: tenant.to_owned(),
            label: label.to_owned(),
            // default: a vector of over 4 billion values is refused below.
            dimensions: u32::try_from(values.len()).unwrap_or(u32::MAX),
            vector,
            source,
            operator: operator.to_owned(),
            config_hash,
        };
        e.check()?;
        Ok(e)
    }

    /// Refuses a vector whose length is not its dimensions, or that holds a
    /// NaN or an infinity.
    ///
    /// # Errors
    /// [`EmbeddingError`] for the first fault.
    pub fn check(&self) -> Result<(), EmbeddingError> {
        if self.vector.len() as u64 != u64::from(self.dimensions) * 4 {
            return Err(EmbeddingError::Length {
                label: self.label.clone(),
                dimensions: self.dimensions,
                bytes: self.vector.len(),
            });
        }
        if let Some(index) = self.values().iter().position(|v| !v.is_finite()) {
            return Err(EmbeddingError::NotFinite {
                label: self.label.clone(),
                index,
            });
        }
        Ok(())
    }

    /// The values (a trailing partial value of a malformed vector is
    /// dropped; [`Embedding::check`] refuses such a vector).
    pub fn values(&self) -> Vec<f32> {
        self.vector
            .chunks_exact(4)
            // default: never taken, every chunk is 4 bytes.
            .map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4])))
            .collect()
    }
}

fn values_json<S: serde::Serializer>(vector: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(
        vector
            .chunks_exact(4)
            // default: never taken, every chunk is 4 bytes.
            .map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4]))),
    )
}

/// One string metadata pair of a keyed memory.
#[derive(
    Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, PartialOrd, Ord, Debug,
)]
#[rkyv(derive(Debug))]
pub struct MetadataPair {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// What a [`KeyedMemory`] does to its key.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum MemoryAction {
    /// Puts the key: a new entry, or one replacing the current entry.
    Remember {
        /// The text that was embedded.
        text: String,
        /// The caller's JSON, canonical ([`crate::json::canonical_json`]).
        content: String,
        /// String pairs, sorted by key then value, keys unique.
        metadata: Vec<MetadataPair>,
        /// When the key was first remembered (kept when an entry is
        /// replaced).
        created_at: Timestamp,
        /// When this entry was written.
        updated_at: Timestamp,
    },
    /// Removes the key.
    Forget,
}

/// A keyed memory decision on `(tenant, namespace, key)`. `previous` is the
/// key's last record (a remember, a forget, or the remember a purge
/// removed), so that writing a key again is always a new record.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct KeyedMemory {
    /// Whose memory it is.
    pub tenant: String,
    /// The kind of memory (`incidents`, `runbooks`…); a recall never
    /// crosses one.
    pub namespace: String,
    /// The caller's id, unique within the namespace and tenant.
    pub key: String,
    /// Remember or forget.
    pub action: MemoryAction,
    /// The key's previous record, if any.
    pub previous: Option<RecordId>,
}

/// A purge: the entries of a tenant (of one namespace, or all) last written
/// before `older_than`, oldest first, at most `limit` of them. `purged`
/// lists the [`KeyedMemory`] records it removed, in that order.
#[derive(Archive, Serialize, Deserialize, serde::Serialize, Clone, PartialEq, Eq, Debug)]
#[rkyv(derive(Debug))]
pub struct MemoryPurge {
    /// Tenant.
    pub tenant: String,
    /// The namespace, or all of the tenant's.
    pub namespace: Option<String>,
    /// The cutoff: entries whose `updated_at` is before it.
    pub older_than: Timestamp,
    /// The most entries removed.
    pub limit: u32,
    /// The removed entries' records, oldest `updated_at` first.
    pub purged: Vec<RecordId>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::envelope::{decode, encode};
    use crate::record::Record;
    use crate::{DecodeError, Digest};

    fn embedding() -> Embedding {
        Embedding::new(
            "acme",
            "test/model",
            &[1.0, 0.0, -2.5],
            RecordId([1; 32]),
            "word-hash@1",
            Digest::default(),
        )
        .unwrap()
    }

    #[test]
    fn values_round_trip_as_little_endian_f32() {
        let e = embedding();
        assert_eq!(e.dimensions, 3);
        assert_eq!(e.vector.len(), 12);
        assert_eq!(e.vector.get(8..12), Some(&(-2.5f32).to_le_bytes()[..]));
        assert_eq!(e.values(), [1.0, 0.0, -2.5]);
    }

    #[test]
    fn a_vector_whose_length_is_not_its_dimensions_is_refused() {
        let mut e = embedding();
        e.dimensions = 4;
        assert!(matches!(
            e.check(),
            Err(EmbeddingError::Length {
                dimensions: 4,
                bytes: 12,
                ..
            })
        ));
        assert!(encode(&Record::Embedding(e.clone())).is_err());
        // Bytes written by another writer are refused at decode.
        let mut good = encode(&Record::Embedding(embedding())).unwrap();
        let bad = {
            let body = rkyv::to_bytes::<rkyv::rancor::Error>(&e).unwrap();
            good.truncate(crate::envelope::HEADER_LEN);
            good.extend_from_slice(&body);
            good
        };
        assert!(matches!(
            decode(&bad),
            Err(DecodeError::InvalidBody {
                kind: "embedding",
                ..
            })
        ));
        assert!(
            Embedding::new(
                "",
                "l",
                &[f32::NAN],
                RecordId::default(),
                "o",
                Digest::default()
            )
            .is_err()
        );
    }
}
