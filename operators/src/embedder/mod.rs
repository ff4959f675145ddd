//! The embedder operator family (seed 002): text in, vectors out, labelled
//! `<provider>/<model>` with a fixed number of dimensions.
//!
//! An embedder is an operator like the others: `name@version` plus the hash
//! of its canonical configuration. Its vectors are only ever compared with
//! vectors of the same [`EmbeddingLabel`]; a vector whose length differs
//! from its label's dimensions is refused ([`check_vectors`]).
//!
//! - [`word_hash`]: `word-hash@1`, a deterministic hashed bag of words for
//!   tests and demos (no model, no network).
//! - `local-embeddings@1` (a sentence-transformers folder run in-process)
//!   and `openai-embeddings@1` (the OpenAI-compatible `/v1/embeddings` API,
//!   recorded as model calls) live in the crates that carry their
//!   dependencies.

pub mod word_hash;

use std::fmt;

use strataflow_record::Digest;

use crate::operator::OperatorId;

pub use word_hash::WordHash;

/// The vector space an embedder writes into: `<provider>/<model>` and the
/// length of every vector. Two labels are the same space only when both
/// parts are equal.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct EmbeddingLabel {
    /// `<provider>/<model>`, for example `sentence-transformers/all-MiniLM-L6-v2`.
    pub name: String,
    /// The length of every vector of this label.
    pub dimensions: u32,
}

impl EmbeddingLabel {
    /// A label from its parts.
    pub fn new(name: &str, dimensions: u32) -> Self {
        Self {
            name: name.to_owned(),
            dimensions,
        }
    }
}

impl fmt::Display for EmbeddingLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} dimensions)", self.name, self.dimensions)
    }
}

/// Why an embedder gave no vectors. Nothing is stored for a failed call.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The model could not be loaded (a missing or unreadable file of the
    /// model folder, an unsupported configuration).
    #[error("cannot load the embedding model at {path}: {reason}")]
    Load {
        /// The file or folder.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A vector's length is not its label's dimensions.
    #[error("vector {index} of {label} has {got} dimensions, expected {expected}")]
    Dimensions {
        /// The label's name.
        label: String,
        /// Position of the vector in the batch.
        index: usize,
        /// The label's dimensions.
        expected: u32,
        /// The vector's length.
        got: usize,
    },
    /// A vector holds a NaN or an infinity.
    #[error("vector {index} of {label} is not finite")]
    NotFinite {
        /// The label's name.
        label: String,
        /// Position of the vector in the batch.
        index: usize,
    },
    /// The answer held another number of vectors than texts asked.
    #[error("asked for {asked} vectors, got {got}")]
    Count {
        /// Texts in the request.
        asked: usize,
        /// Vectors in the answer.
        got: usize,
    },
    /// The model (local or remote) failed; the text says why.
    #[error("embedding failed: {0}")]
    Failed(String),
    /// An embedding needed a model call that is not recorded, in offline
    /// mode: nothing was asked and nothing stored.
    #[error("offline: embedding request {key} is not recorded")]
    Offline {
        /// The request key (hex).
        key: String,
    },
}

/// Text in, vectors out. Implementations must be deterministic for a given
/// model and configuration: the same texts give the same vectors bit for bit
/// on the same build (remote ones are made so by recording every call).
pub trait Embedder: Send + Sync {
    /// `name@version`.
    fn id(&self) -> OperatorId;
    /// Hash of the canonical configuration ([`crate::operator::config_hash`]).
    fn config_hash(&self) -> Digest;
    /// The vector space of its output.
    fn label(&self) -> &EmbeddingLabel;
    /// One vector per text, in order, each of `label().dimensions` finite
    /// values (normalised or not as the model's configuration says).
    ///
    /// # Errors
    /// [`EmbedError`] when the model fails or answers badly; implementations
    /// check their answers with [`check_vectors`].
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// What it asked of a model service since it was built (nothing for an
    /// in-process embedder): the counters `status` adds to its model calls.
    fn calls(&self) -> EmbedCalls {
        EmbedCalls::default()
    }
}

/// Requests of an embedder backed by a model service, since it was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmbedCalls {
    /// Requests answered from a recorded call, with no HTTP request.
    pub served_from_log: u64,
    /// Requests that ended in an error.
    pub failed: u64,
    /// HTTP requests retried beyond the first attempt of each call.
    pub retries: u64,
}

/// Refuses an answer that does not hold one finite vector of the label's
/// dimensions per text asked.
///
/// # Errors
/// [`EmbedError::Count`], [`EmbedError::Dimensions`] or
/// [`EmbedError::NotFinite`] for the first fault.
pub fn check_vectors(
    label: &EmbeddingLabel,
    asked: usize,
    vectors: &[Vec<f32>],
) -> Result<(), EmbedError> {
    if vectors.len() != asked {
        return Err(EmbedError::Count {
            asked,
            got: vectors.len(),
        });
    }
    for (index, v) in vectors.iter().enumerate() {
        if v.len() != label.dimensions as usize {
            return Err(EmbedError::Dimensions {
                label: label.name.clone(),
                index,
                expected: label.dimensions,
                got: v.len(),
            });
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(EmbedError::NotFinite {
                label: label.name.clone(),
                index,
            });
        }
    }
    Ok(())
}

/// Cosine similarity of two vectors of one label (0 when either is zero).
/// Accumulates in f32 in index order, so the result is the same on every
/// run of a build.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

/// Scales a vector to unit length in place (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in v {
            *x /= norm;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_length_or_count_is_refused() {
        let label = EmbeddingLabel::new("test/model", 3);
        assert!(check_vectors(&label, 1, &[vec![1.0, 0.0, 0.0]]).is_ok());
        assert!(matches!(
            check_vectors(&label, 1, &[vec![1.0, 0.0]]),
            Err(EmbedError::Dimensions { got: 2, .. })
        ));
        assert!(matches!(
            check_vectors(&label, 2, &[vec![1.0, 0.0, 0.0]]),
            Err(EmbedError::Count { asked: 2, got: 1 })
        ));
        assert!(matches!(
            check_vectors(&label, 1, &[vec![f32::NAN, 0.0, 0.0]]),
            Err(EmbedError::NotFinite { index: 0, .. })
        ));
    }

    #[test]
    fn cosine_of_parallel_and_orthogonal_vectors() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[0.0, 1.0]), 0.0);
    }
}
