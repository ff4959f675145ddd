//! `word-hash@1`: a deterministic hashed bag of words (seed 002's test
//! embedder). Each folded word ([`strataflow_text::tokens::words`]) adds ±1
//! to one of `dimensions` buckets, both chosen by the word's blake3 hash;
//! the sum is scaled to unit length. Texts sharing words are similar, the
//! same text always gives the same vector, and nothing is downloaded.

use strataflow_record::Digest;
use strataflow_text::tokens::words;

use super::{EmbedError, Embedder, EmbeddingLabel, check_vectors, normalise};
use crate::operator::{OperatorId, config_hash};

/// The operator's name.
pub const NAME: &str = "word-hash";
/// Its one version.
pub const VERSION: u32 = 1;
/// Dimensions when the configuration names none.
pub const DEFAULT_DIMENSIONS: u32 = 256;

/// `word-hash@1` with its number of dimensions.
#[derive(Clone, Debug)]
pub struct WordHash {
    label: EmbeddingLabel,
}

impl WordHash {
    /// An embedder of `dimensions` buckets (at least 1).
    ///
    /// # Errors
    /// [`EmbedError::Load`] when `dimensions` is 0.
    pub fn new(dimensions: u32) -> Result<Self, EmbedError> {
        if dimensions == 0 {
            return Err(EmbedError::Load {
                path: "word-hash@1".to_owned(),
                reason: "dimensions must be at least 1".to_owned(),
            });
        }
        Ok(Self {
            label: EmbeddingLabel::new(&format!("strataflow/word-hash-{dimensions}"), dimensions),
        })
    }

    fn vector(&self, text: &str) -> Vec<f32> {
        let dims = self.label.dimensions as usize;
        let mut v = vec![0.0f32; dims];
        for token in words(text) {
            let hash = blake3::hash(token.folded().as_bytes());
            let bytes = hash.as_bytes();
            let bucket = u64::from_le_bytes([
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            ]) % dims as u64;
            let sign = if bytes[8] & 1 == 0 { 1.0 } else { -1.0 };
            #[expect(clippy::indexing_slicing, reason = "bucket < dims by the modulo")]
            {
                v[bucket as usize] += sign;
            }
        }
        normalise(&mut v);
        v
    }
}

impl Embedder for WordHash {
    fn id(&self) -> OperatorId {
        OperatorId::new(NAME, VERSION)
    }

    fn config_hash(&self) -> Digest {
        config_hash(
            &self.id(),
            &format!("{{\"dimensions\":{}}}", self.label.dimensions),
        )
    }

    fn label(&self) -> &EmbeddingLabel {
        &self.label
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors: Vec<Vec<f32>> = texts.iter().map(|t| self.vector(t)).collect();
        check_vectors(&self.label, texts.len(), &vectors)?;
        Ok(vectors)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::embedder::cosine;

    #[test]
    fn same_text_same_vector_and_shared_words_are_closer() {
        let e = WordHash::new(64).unwrap();
        let v = e
            .embed(&[
                "the database is down",
                "the database is down",
                "database outage",
                "I like tea",
            ])
            .unwrap();
        assert_eq!(v[0], v[1]);
        assert_eq!(v[0].len(), 64);
        assert!(cosine(&v[0], &v[2]) > cosine(&v[0], &v[3]));
        assert_eq!(e.label().name, "strataflow/word-hash-64");
        assert_eq!(e.id().to_string(), "word-hash@1");
    }

    #[test]
    fn zero_dimensions_are_refused() {
        assert!(WordHash::new(0).is_err());
    }

    #[test]
    fn vectors_are_pinned() {
        // An operator version's outputs never change.
        let v = WordHash::new(8).unwrap().embed(&["Hello world"]).unwrap();
        let bits: Vec<u32> = v[0].iter().map(|x| x.to_bits()).collect();
        assert_eq!(bits, [0, 0, 1060439283, 0, 0, 0, 0, 3207922931]);
    }
}
