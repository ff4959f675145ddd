//! Derived embeddings: when a profile names an embedder
//! ([`Profile::embedder`]), derivation also writes one [`Embedding`] record
//! for each message, each block summary and each event of the profile. An
//! embedding is the child of the record it embeds, so a source that already
//! has one of the embedder (operator, configuration hash, label) is never
//! embedded again: replay and a second run ask nothing, and a profile that
//! changes only the embedder derives only embeddings.

use std::sync::Arc;

use strataflow_log::record::{Embedding, Record, RecordKind};
use strataflow_log::{Durability, RecordId};
use strataflow_operators::embedder::{Embedder, check_vectors};
use strataflow_operators::profile::Profile;
use strataflow_pipeline::derive::summary_state;

use super::keyed::embedder_from_spec;
use super::{KeyedMemoryError, Memory, MemoryError};

/// Texts sent to the embedder at once (the embedder batches further).
const EMBED_BATCH: usize = 64;

/// What one embedding pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EmbedStats {
    /// Embedding records written.
    pub written: u64,
    /// Sources that already had an embedding of this embedder.
    pub already: u64,
}

/// One text to embed: its record and tenant.
struct Pending {
    source: RecordId,
    tenant: String,
    text: String,
}

/// The text of a derived record that its embedding stands for.
pub(crate) fn embedded_text(record: &Record) -> Option<String> {
    match record {
        Record::Message(m) => Some(m.content.clone()),
        Record::BlockSummary(s) => Some(join(&[
            s.title.as_str(),
            s.summary.as_str(),
            &s.key_points.join(" "),
        ])),
        Record::Event(e) => Some(join(&[
            e.title.as_str(),
            e.summary.as_str(),
            e.narrative.as_str(),
            &e.quotes.join(" "),
        ])),
        _ => None,
    }
}

fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

impl Memory {
    /// The embedder a profile names, if any, connected to its model service.
    ///
    /// # Errors
    /// [`KeyedMemoryError::UnknownEmbedder`] for a spec this build cannot use.
    pub(crate) fn profile_embedder(
        &self,
        profile: &Profile,
    ) -> Result<Option<Arc<dyn Embedder>>, MemoryError> {
        let Some(spec) = &profile.embedder else {
            return Ok(None);
        };
        let service = self.embedding_service_for(profile);
        Ok(Some(embedder_from_spec(spec, Some(&service))?))
    }

    /// Writes the embeddings `profile`'s embedder has not written yet: for
    /// every message, block summary and event of the profile, in log order.
    /// A profile without an embedder does nothing.
    ///
    /// # Errors
    /// [`KeyedMemoryError::Embed`] when the embedder fails (what was
    /// written before stays: the next run resumes); the store's.
    pub fn derive_embeddings(&self, profile: Option<&str>) -> Result<EmbedStats, MemoryError> {
        let profile = self.profile_or_default(profile)?;
        let Some(embedder) = self.profile_embedder(&profile)? else {
            return Ok(EmbedStats::default());
        };
        let (_, ops) = self.operators(Some(&profile.name))?;
        let operator = embedder.id().to_string();
        let config = embedder.config_hash();
        let label = embedder.label().clone();
        let mut stats = EmbedStats::default();
        let mut pending = Vec::new();
        let mut consider = |source: RecordId, record: &Record, stats: &mut EmbedStats| {
            let done = self
                .store
                .children_of_kind(&source, RecordKind::Embedding)?
                .into_iter()
                .any(|c| {
                    matches!(&c.record, Record::Embedding(e)
                        if e.operator == operator && e.config_hash == config && e.label == label.name)
                });
            if done {
                stats.already += 1;
            } else if let Some(text) = embedded_text(record) {
                pending.push(Pending {
                    source,
                    tenant: record.tenant().to_owned(),
                    text,
                });
            }
            Ok::<(), MemoryError>(())
        };
        for (tenant, thread, _) in self.store.thread_heads()? {
            for entry in self.store.thread_records(&tenant, &thread, 0) {
                let (_, kind, id) = entry?;
                match kind {
                    RecordKind::Message => {
                        if let Some(stored) = self.store.get(&id)? {
                            consider(id, &stored.record, &mut stats)?;
                        }
                    }
                    RecordKind::Block => {
                        let summaries = summary_state(&self.store, &ops, &id)?;
                        // default: a block not summarised yet has no summary to embed.
                        for s in summaries.done.map(|d| d.outputs).unwrap_or_default() {
                            if let Some(stored) = self.store.get(&s)? {
                                consider(s, &stored.record, &mut stats)?;
                            }
                        }
                    }
                    _ => {}
                }
            }
            for (event, _, e) in self
                .profile_events(Some(&profile.name), &tenant, Some(&thread))?
                .events
            {
                consider(event, &Record::Event(e), &mut stats)?;
            }
        }
        for chunk in pending.chunks(EMBED_BATCH) {
            let texts: Vec<&str> = chunk.iter().map(|p| p.text.as_str()).collect();
            let embed_error = |source| KeyedMemoryError::Embed {
                namespace: format!("profile {}", profile.name),
                id: chunk
                    .first()
                    .map(|p| p.source.to_string())
                    .unwrap_or_default(),
                source,
            };
            let vectors = embedder.embed(&texts).map_err(embed_error)?;
            check_vectors(&label, texts.len(), &vectors).map_err(embed_error)?;
            let mut records = Vec::with_capacity(chunk.len());
            for (p, v) in chunk.iter().zip(&vectors) {
                let e = Embedding::new(&p.tenant, &label.name, v, p.source, &operator, config)
                    .map_err(|e| KeyedMemoryError::Embed {
                        namespace: format!("profile {}", profile.name),
                        id: p.source.to_string(),
                        source: strataflow_operators::embedder::EmbedError::Failed(e.to_string()),
                    })?;
                records.push(Record::Embedding(e));
            }
            let receipt = self.store.append(&records, Durability::Sync)?;
            stats.written += receipt.new_count() as u64;
        }
        Ok(stats)
    }
}

/// One match of a dense search.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DenseHit {
    /// The record the vector embeds (a message, block summary or event).
    pub id: RecordId,
    /// Its kind: `message`, `block_summary` or `event`.
    pub kind: &'static str,
    /// The text that was embedded (the evidence itself).
    pub text: String,
    /// Cosine similarity with the query, from −1 to 1.
    pub similarity: f32,
}

/// A dense search's answer.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DenseResponse {
    /// The label searched (only its vectors are compared).
    pub label: String,
    /// Vectors of the label and tenant searched.
    pub vectors: usize,
    /// Most similar first, equal similarities by id.
    pub hits: Vec<DenseHit>,
}

/// Hits of a dense search when no limit is given.
pub const DEFAULT_DENSE_LIMIT: usize = 10;

impl Memory {
    /// The `limit` records of `tenant` whose derived embeddings (of
    /// `profile`'s embedder, see [`Memory::derive_embeddings`]) are most
    /// like `query`'s, by exact cosine (an HNSW graph above
    /// [`strataflow_materializers::vector::VectorConfig::approximate_above`]
    /// vectors). Vectors of another label are never compared.
    ///
    /// # Errors
    /// [`super::ProfileError::NoEmbedder`] when the profile names no
    /// embedder; [`KeyedMemoryError::Embed`] when the query cannot be
    /// embedded; the store's.
    pub fn dense_search(
        &self,
        profile: Option<&str>,
        tenant: &str,
        query: &str,
        limit: Option<usize>,
    ) -> Result<DenseResponse, MemoryError> {
        use strataflow_materializers::vector::{ExactIndex, VectorConfig, VectorIndex};
        let profile = self.profile_or_default(profile)?;
        let Some(embedder) = self.profile_embedder(&profile)? else {
            return Err(super::ProfileError::NoEmbedder {
                name: profile.name.clone(),
            }
            .into());
        };
        let label = embedder.label().clone();
        let operator = embedder.id().to_string();
        let config = embedder.config_hash();
        let embed_error = |source| KeyedMemoryError::Embed {
            namespace: format!("profile {}", profile.name),
            id: String::new(),
            source,
        };
        let index_error = |e: strataflow_materializers::vector::VectorError| {
            embed_error(strataflow_operators::embedder::EmbedError::Failed(
                e.to_string(),
            ))
        };
        let mut exact = ExactIndex::new(label.dimensions as usize);
        for entry in self.store.ids_of_kind(RecordKind::Embedding) {
            let (_, id) = entry?;
            let Some(stored) = self.store.get(&id)? else {
                continue;
            };
            if let Record::Embedding(e) = stored.record
                && e.tenant == tenant
                && e.label == label.name
                && e.operator == operator
                && e.config_hash == config
            {
                let values = e.values();
                if values.iter().any(|v| *v != 0.0) {
                    exact.insert(e.source, &values).map_err(index_error)?;
                }
            }
        }
        let vectors = exact.len();
        let mut hits = Vec::new();
        if vectors > 0 {
            let mut q = embedder.embed(&[query]).map_err(embed_error)?;
            check_vectors(&label, 1, &q).map_err(embed_error)?;
            let q = q.pop().unwrap_or_default();
            if q.iter().any(|v| *v != 0.0) {
                let index =
                    VectorIndex::build(exact, &VectorConfig::default()).map_err(index_error)?;
                let k = limit.unwrap_or(DEFAULT_DENSE_LIMIT);
                for hit in index.search(&q, k, None).map_err(index_error)? {
                    let Some(stored) = self.store.get(&hit.id)? else {
                        continue;
                    };
                    let kind = match stored.record.kind() {
                        RecordKind::Message => "message",
                        RecordKind::BlockSummary => "block_summary",
                        RecordKind::Event => "event",
                        _ => continue,
                    };
                    hits.push(DenseHit {
                        id: hit.id,
                        kind,
                        text: embedded_text(&stored.record).unwrap_or_default(),
                        similarity: hit.similarity,
                    });
                }
            }
        }
        Ok(DenseResponse {
            label: label.name,
            vectors,
            hits,
        })
    }
}
