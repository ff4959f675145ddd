//! The keyed-memory view of one tenant (seed 002): the current entry of
//! every `(namespace, key)` with its vectors per label, folded from
//! [`KeyedMemory`](strataflow_record::record::KeyedMemory),
//! [`Embedding`](strataflow_record::record::Embedding) and
//! [`MemoryPurge`](strataflow_record::record::MemoryPurge) records in log
//! order, and the exact cosine recall over it ([`exact_scan`], the one
//! function an approximate index may replace).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use strataflow_record::RecordId;
use strataflow_record::record::{MemoryAction, Record};

use crate::view::{Materialized, STATE_FORMAT, rkyv_encoding};

/// One vector of an entry.
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct StoredVector {
    /// The `Embedding` record.
    pub embedding: RecordId,
    /// The values (the label's dimensions).
    pub values: Vec<f32>,
}

/// The current entry of a key.
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct MemoryEntry {
    /// The `KeyedMemory` record that remembered it.
    pub record: RecordId,
    /// The text that was embedded.
    pub text: String,
    /// The caller's JSON, canonical.
    pub content: String,
    /// String pairs, sorted.
    pub metadata: Vec<(String, String)>,
    /// First remembered (UTC ms).
    pub created_at_ms: i64,
    /// Last written (UTC ms).
    pub updated_at_ms: i64,
    /// Label name → its vector.
    pub vectors: BTreeMap<String, StoredVector>,
}

impl MemoryEntry {
    /// Whether the entry has every one of these metadata pairs.
    pub fn has_metadata(&self, pairs: &[(String, String)]) -> bool {
        pairs.iter().all(|p| self.metadata.contains(p))
    }
}

/// Where a remember record's entry is.
#[derive(
    Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Default,
)]
pub struct KeyRef {
    /// Namespace.
    pub namespace: String,
    /// Key.
    pub key: String,
}

/// The keyed memories of one tenant.
#[derive(Clone, Debug, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct KeyedMemoryState {
    /// Namespace → key → current entry.
    pub entries: BTreeMap<String, BTreeMap<String, MemoryEntry>>,
    /// Namespace → key → the key's last record (remember, forget, or the
    /// remember a purge removed): the `previous` of the next one.
    pub last: BTreeMap<String, BTreeMap<String, RecordId>>,
    /// Current remember record → its key.
    pub by_record: BTreeMap<RecordId, KeyRef>,
    /// Keyed-memory records applied (remember, forget, purge, embedding).
    pub applied: u64,
}

/// What a recall keeps besides the ranking: ids never returned and pairs
/// every match must have. Filters apply before the ranking.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecallFilter {
    /// Keys never returned.
    pub exclude: Vec<String>,
    /// Pairs every match has.
    pub metadata: Vec<(String, String)>,
}

impl KeyedMemoryState {
    /// The current entry of a key.
    pub fn get(&self, namespace: &str, key: &str) -> Option<&MemoryEntry> {
        self.entries.get(namespace)?.get(key)
    }

    /// The key's last record, the `previous` of the next record on it.
    pub fn last_record(&self, namespace: &str, key: &str) -> Option<RecordId> {
        self.last.get(namespace)?.get(key).copied()
    }

    /// The current entries of a namespace, by key.
    pub fn namespace(&self, namespace: &str) -> impl Iterator<Item = (&String, &MemoryEntry)> {
        self.entries.get(namespace).into_iter().flatten()
    }

    /// The entries of `namespace` that have a vector of `label` and pass
    /// `filter`, ranked against `query` by [`exact_scan`]: at most `limit`,
    /// most similar first, equal similarities by key.
    pub fn recall(
        &self,
        namespace: &str,
        label: &str,
        query: &[f32],
        filter: &RecallFilter,
        limit: usize,
        min_similarity: Option<f32>,
    ) -> Vec<(&str, &MemoryEntry, f32)> {
        let candidates = self
            .namespace(namespace)
            .filter(|(key, e)| !filter.exclude.contains(key) && e.has_metadata(&filter.metadata))
            .filter_map(|(key, e)| {
                e.vectors
                    .get(label)
                    .map(|v| (key.as_str(), v.values.as_slice()))
            });
        exact_scan(candidates, query, limit, min_similarity)
            .into_iter()
            .filter_map(|(key, s)| self.get(namespace, key).map(|e| (key, e, s)))
            .collect()
    }

    /// The remember records a purge removes: entries of `namespace` (or
    /// all) whose `updated_at` is before `older_than_ms`, oldest first
    /// (then by namespace and key), at most `limit`.
    pub fn purge_candidates(
        &self,
        namespace: Option<&str>,
        older_than_ms: i64,
        limit: usize,
    ) -> Vec<RecordId> {
        let mut old: Vec<(i64, &str, &str, RecordId)> = self
            .entries
            .iter()
            .filter(|(ns, _)| namespace.is_none_or(|n| n == ns.as_str()))
            .flat_map(|(ns, keys)| keys.iter().map(move |(k, e)| (ns, k, e)))
            .filter(|(_, _, e)| e.updated_at_ms < older_than_ms)
            .map(|(ns, k, e)| (e.updated_at_ms, ns.as_str(), k.as_str(), e.record))
            .collect();
        old.sort();
        old.into_iter().take(limit).map(|o| o.3).collect()
    }

    fn remove_record(&mut self, record: &RecordId) {
        if let Some(at) = self.by_record.remove(record)
            && let Some(keys) = self.entries.get_mut(&at.namespace)
        {
            keys.remove(&at.key);
            if keys.is_empty() {
                self.entries.remove(&at.namespace);
            }
        }
    }
}

/// The exact cosine ranking ([`strataflow_operators`]' `cosine`, in f32,
/// index order): every candidate compared with `query`, those below
/// `min_similarity` dropped, most similar first, equal similarities by id,
/// at most `limit`. Similarity is 1 − cosine distance, i.e. the cosine.
pub fn exact_scan<'a>(
    candidates: impl IntoIterator<Item = (&'a str, &'a [f32])>,
    query: &[f32],
    limit: usize,
    min_similarity: Option<f32>,
) -> Vec<(&'a str, f32)> {
    let mut scored: Vec<(&str, f32)> = candidates
        .into_iter()
        .map(|(id, v)| (id, strataflow_operators::embedder::cosine(query, v)))
        .filter(|(_, s)| min_similarity.is_none_or(|m| *s >= m))
        .collect();
    scored.sort_by(|a, b| match b.1.total_cmp(&a.1) {
        Ordering::Equal => a.0.cmp(b.0),
        o => o,
    });
    scored.truncate(limit);
    scored
}

impl Materialized for KeyedMemoryState {
    const NAME: &'static str = "keyed_memories";

    rkyv_encoding!();

    fn apply(&mut self, id: &RecordId, record: &Record) {
        match record {
            Record::KeyedMemory(m) => {
                self.applied += 1;
                let previous = self.get(&m.namespace, &m.key).map(|e| e.record);
                if let Some(previous) = previous {
                    self.remove_record(&previous);
                }
                self.last
                    .entry(m.namespace.clone())
                    .or_default()
                    .insert(m.key.clone(), *id);
                if let MemoryAction::Remember {
                    text,
                    content,
                    metadata,
                    created_at,
                    updated_at,
                } = &m.action
                {
                    self.by_record.insert(
                        *id,
                        KeyRef {
                            namespace: m.namespace.clone(),
                            key: m.key.clone(),
                        },
                    );
                    self.entries.entry(m.namespace.clone()).or_default().insert(
                        m.key.clone(),
                        MemoryEntry {
                            record: *id,
                            text: text.clone(),
                            content: content.clone(),
                            metadata: metadata
                                .iter()
                                .map(|p| (p.key.clone(), p.value.clone()))
                                .collect(),
                            created_at_ms: created_at.0,
                            updated_at_ms: updated_at.0,
                            vectors: BTreeMap::new(),
                        },
                    );
                }
            }
            Record::Embedding(e) => {
                let Some(at) = self.by_record.get(&e.source) else {
                    // An embedding of anything but a current keyed memory
                    // is not this view's.
                    return;
                };
                self.applied += 1;
                if let Some(entry) = self
                    .entries
                    .get_mut(&at.namespace)
                    .and_then(|keys| keys.get_mut(&at.key))
                {
                    entry.vectors.insert(
                        e.label.clone(),
                        StoredVector {
                            embedding: *id,
                            values: e.values(),
                        },
                    );
                }
            }
            Record::MemoryPurge(p) => {
                self.applied += 1;
                for r in &p.purged {
                    self.remove_record(r);
                }
            }
            _ => {}
        }
    }

    fn digest(&self) -> String {
        let mut h = blake3::Hasher::new_derive_key("strataflow view keyed_memories v1");
        let field = |h: &mut blake3::Hasher, s: &str| {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        for (ns, keys) in &self.entries {
            for (key, e) in keys {
                field(&mut h, ns);
                field(&mut h, key);
                h.update(e.record.as_bytes());
                for (label, v) in &e.vectors {
                    field(&mut h, label);
                    h.update(v.embedding.as_bytes());
                }
            }
        }
        h.update(b"last");
        for (ns, keys) in &self.last {
            for (key, id) in keys {
                field(&mut h, ns);
                field(&mut h, key);
                h.update(id.as_bytes());
            }
        }
        h.finalize().to_hex().to_string()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn equal_similarities_are_ordered_by_id_and_min_similarity_drops() {
        let a = [1.0f32, 0.0];
        let b = [0.0f32, 1.0];
        let got = exact_scan(
            [("z", &a[..]), ("a", &a[..]), ("m", &b[..])],
            &[1.0, 0.0],
            10,
            None,
        );
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), ["a", "z", "m"]);
        let got = exact_scan([("z", &a[..]), ("m", &b[..])], &[1.0, 0.0], 10, Some(0.5));
        assert_eq!(got.len(), 1);
        let got = exact_scan([("z", &a[..]), ("a", &a[..])], &[1.0, 0.0], 1, None);
        assert_eq!(got[0].0, "a");
    }
}
