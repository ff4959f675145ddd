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
use strataflow_materializers::dense_view::{DENSE_VIEW, DenseIdentity, DenseView, SourceKind};
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

    /// The embedder of a profile built offline: what names its vectors
    /// (operator, configuration, label) without a client or an API key, for
    /// the reports that embed nothing (`views`, `audit`, `status`).
    fn profile_embedder_identity(
        &self,
        profile: &Profile,
    ) -> Result<Option<DenseIdentity>, MemoryError> {
        let Some(spec) = &profile.embedder else {
            return Ok(None);
        };
        let service = super::EmbeddingService {
            offline: true,
            ..self.embedding_service_for(profile)
        };
        let embedder = embedder_from_spec(spec, Some(&service))?;
        Ok(Some(dense_identity(embedder.as_ref())))
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
        let embedded = self.embed_pending(embedder.as_ref(), &profile.name, &pending, &mut stats);
        // What the embedder asked of its service, whether it failed or not.
        self.add_embed_calls(embedder.calls())?;
        embedded?;
        // The tenants' dense views take the new rows now, not at their
        // first query.
        let identity = dense_identity(embedder.as_ref());
        let mut tenants: Vec<&str> = pending.iter().map(|p| p.tenant.as_str()).collect();
        tenants.sort_unstable();
        tenants.dedup();
        for tenant in tenants {
            self.dense_view(tenant, &identity, true)?;
        }
        Ok(stats)
    }
}

impl Memory {
    /// Embeds `pending` in batches of [`EMBED_BATCH`] and appends one
    /// `Embedding` record per source, counting them in `stats`.
    fn embed_pending(
        &self,
        embedder: &dyn Embedder,
        profile: &str,
        pending: &[Pending],
        stats: &mut EmbedStats,
    ) -> Result<(), MemoryError> {
        let operator = embedder.id().to_string();
        let config = embedder.config_hash();
        let label = embedder.label().clone();
        for chunk in pending.chunks(EMBED_BATCH) {
            let texts: Vec<&str> = chunk.iter().map(|p| p.text.as_str()).collect();
            let embed_error = |source| KeyedMemoryError::Embed {
                namespace: format!("profile {profile}"),
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
                        namespace: format!("profile {profile}"),
                        id: p.source.to_string(),
                        source: strataflow_operators::embedder::EmbedError::Failed(e.to_string()),
                    })?;
                records.push(Record::Embedding(e));
            }
            let receipt = self.store.append(&records, Durability::Sync)?;
            stats.written += receipt.new_count() as u64;
        }
        Ok(())
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
    /// like `query`'s: [`Memory::dense_search_in`] over every thread.
    ///
    /// # Errors
    /// As [`Memory::dense_search_in`].
    pub fn dense_search(
        &self,
        profile: Option<&str>,
        tenant: &str,
        query: &str,
        limit: Option<usize>,
    ) -> Result<DenseResponse, MemoryError> {
        self.dense_search_in(profile, tenant, query, limit, None)
    }

    /// The `limit` records of `tenant` (of `thread` only, when given) whose
    /// derived embeddings of `profile`'s embedder are most like `query`'s,
    /// by exact cosine (an HNSW graph above
    /// [`strataflow_materializers::vector::VectorConfig::approximate_above`]
    /// vectors), read from the tenant's persisted dense view
    /// (`Memory::dense_view`), not from a scan of the log. Vectors of
    /// another label, embedder or tenant are never compared.
    ///
    /// # Errors
    /// [`super::ProfileError::NoEmbedder`] when the profile names no
    /// embedder; [`KeyedMemoryError::Embed`] when the query cannot be
    /// embedded; the store's.
    pub fn dense_search_in(
        &self,
        profile: Option<&str>,
        tenant: &str,
        query: &str,
        limit: Option<usize>,
        thread: Option<&str>,
    ) -> Result<DenseResponse, MemoryError> {
        use strataflow_materializers::vector::VectorConfig;
        let profile = self.profile_or_default(profile)?;
        let Some(embedder) = self.profile_embedder(&profile)? else {
            return Err(super::ProfileError::NoEmbedder {
                name: profile.name.clone(),
            }
            .into());
        };
        let label = embedder.label().clone();
        let embed_error = |source| KeyedMemoryError::Embed {
            namespace: format!("profile {}", profile.name),
            id: String::new(),
            source,
        };
        let view = self.dense_view(tenant, &dense_identity(embedder.as_ref()), true)?;
        let vectors = view.len();
        let mut hits = Vec::new();
        if vectors > 0 {
            let mut q = embedder.embed(&[query]).map_err(embed_error)?;
            check_vectors(&label, 1, &q).map_err(embed_error)?;
            let q = q.pop().unwrap_or_default();
            if q.iter().any(|v| *v != 0.0) {
                let k = limit.unwrap_or(DEFAULT_DENSE_LIMIT);
                let matches = view
                    .search(&q, k, thread, &VectorConfig::default())
                    .map_err(|e| {
                        embed_error(strataflow_operators::embedder::EmbedError::Failed(
                            e.to_string(),
                        ))
                    })?;
                for m in matches {
                    let Some(stored) = self.store.get(&m.source)? else {
                        continue;
                    };
                    hits.push(DenseHit {
                        id: m.source,
                        kind: m.kind.name(),
                        text: embedded_text(&stored.record).unwrap_or_default(),
                        similarity: m.similarity,
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

    /// The dense view of `tenant` for one embedder, up to the end of the
    /// log: resumed from its persisted snapshot when there is a valid one
    /// (an unreadable, damaged, older-format or foreign one is rebuilt,
    /// never trusted), then fed the `Embedding` records logged after its
    /// last sequence (read through the kind index, not a scan of the log),
    /// and saved back (with `save`) when it applied or went past any. With
    /// `save` false it is built from the first record and neither read nor
    /// saved: the rebuild `views --verify` compares with.
    ///
    /// # Errors
    /// The store's; [`KeyedMemoryError::Embed`] for an embedding of the
    /// label whose vector the view refuses (wrong length).
    pub(crate) fn dense_view(
        &self,
        tenant: &str,
        identity: &DenseIdentity,
        save: bool,
    ) -> Result<DenseView, MemoryError> {
        let key = identity.key();
        let loaded = if save {
            match self.store.view_chunks(&key, tenant) {
                Ok(None) => None,
                Ok(Some((seq, bytes))) => match DenseView::decode(&bytes, tenant, identity) {
                    Ok(v) if v.last_seq() == seq => Some(v),
                    Ok(v) => {
                        tracing::warn!(view = %key, tenant, "dense view says sequence {} but is stored at {seq}; rebuilding", v.last_seq());
                        None
                    }
                    Err(e) => {
                        tracing::warn!(view = %key, tenant, "dense view unreadable ({e}); rebuilding");
                        None
                    }
                },
                Err(strataflow_log::StoreError::Corrupt { detail, .. }) => {
                    tracing::warn!(view = %key, tenant, "dense view damaged ({detail}); rebuilding");
                    None
                }
                Err(e) => return Err(e.into()),
            }
        } else {
            None
        };
        let resumed = loaded.is_some();
        let mut view = loaded.unwrap_or_else(|| DenseView::new(tenant, identity.clone()));
        // default: an empty log has nothing to apply.
        let end = self.store.last_seq()?.unwrap_or_default();
        let mut seen = 0u64;
        for entry in self
            .store
            .ids_of_kind_from(RecordKind::Embedding, view.last_seq() + 1)
        {
            let (seq, id) = entry?;
            if seq > end {
                break;
            }
            seen += 1;
            view.skip_to(seq);
            let Some(stored) = self.store.get(&id)? else {
                continue;
            };
            let Record::Embedding(e) = stored.record else {
                continue;
            };
            if e.tenant != tenant
                || e.label != identity.label
                || e.operator != identity.operator
                || e.config_hash != identity.config
            {
                continue;
            }
            let Some((kind, thread)) = self.dense_source(&e.source)? else {
                // An embedding of a keyed memory (or anything else that is
                // not derived) is not this view's.
                continue;
            };
            view.apply(seq, e.source, id, kind, &thread, &e.values())
                .map_err(|err| KeyedMemoryError::Embed {
                    namespace: format!("dense view {key}"),
                    id: id.to_string(),
                    source: strataflow_operators::embedder::EmbedError::Failed(err.to_string()),
                })?;
        }
        view.skip_to(end);
        if save && (seen > 0 || !resumed) {
            let bytes = view.encode();
            self.store
                .save_view_chunks(&key, tenant, view.last_seq(), &bytes)?;
            tracing::info!(
                view = key,
                tenant,
                rows = view.len(),
                bytes = bytes.len(),
                "dense view saved"
            );
        }
        Ok(view)
    }

    /// The kind and thread of a record an embedding embeds, or `None` for
    /// a record that is not a message, block summary or event.
    fn dense_source(&self, source: &RecordId) -> Result<Option<(SourceKind, String)>, MemoryError> {
        let Some(stored) = self.store.get(source)? else {
            return Ok(None);
        };
        let (kind, block) = match stored.record {
            Record::Message(m) => return Ok(Some((SourceKind::Message, m.thread))),
            Record::BlockSummary(s) => (SourceKind::BlockSummary, s.block),
            Record::Event(e) => (SourceKind::Event, e.block),
            _ => return Ok(None),
        };
        Ok(match self.store.get(&block)?.map(|b| b.record) {
            Some(Record::Block(b)) => Some((kind, b.thread)),
            _ => None,
        })
    }

    /// The dense view's report of a tenant under `profile` (refreshed, and
    /// with `verify` rebuilt from the first record), or `None` when the
    /// profile names no embedder.
    pub(crate) fn dense_view_report(
        &self,
        profile: Option<&str>,
        tenant: &str,
        verify: bool,
    ) -> Result<Option<super::views::ViewReport>, MemoryError> {
        let profile = self.profile_or_default(profile)?;
        let Some(identity) = self.profile_embedder_identity(&profile)? else {
            return Ok(None);
        };
        let view = self.dense_view(tenant, &identity, true)?;
        let rebuilt = if verify {
            Some(self.dense_view(tenant, &identity, false)?.digest())
        } else {
            None
        };
        Ok(Some(super::views::ViewReport {
            view: DENSE_VIEW,
            tenant: tenant.to_owned(),
            last_seq: view.last_seq(),
            digest: view.digest(),
            rebuilt,
        }))
    }
}

impl Memory {
    /// A profile's embedder and the rows of every tenant's dense view of
    /// it (each brought up to the end of the log), `None` when it names
    /// none.
    pub(crate) fn embedder_status(
        &self,
        profile: &Profile,
    ) -> Result<Option<super::EmbedderStatus>, MemoryError> {
        let Some(identity) = self.profile_embedder_identity(profile)? else {
            return Ok(None);
        };
        let mut vectors = 0u64;
        for tenant in self.tenants()? {
            vectors += self.dense_view(&tenant, &identity, true)?.len() as u64;
        }
        Ok(Some(super::EmbedderStatus {
            operator: identity.operator,
            label: identity.label,
            vectors,
        }))
    }

    /// The `views` key of the dense view of `profile`'s embedder
    /// (`dense/<operator>/<config short>/<label>`), `None` when it names
    /// none.
    // reason: the dense view tests damage the stored view under this key;
    // not an API.
    #[doc(hidden)]
    pub fn dense_view_key(&self, profile: Option<&str>) -> Result<Option<String>, MemoryError> {
        let profile = self.profile_or_default(profile)?;
        Ok(self
            .profile_embedder_identity(&profile)?
            .map(|identity| identity.key()))
    }
}

/// The dense view identity of an embedder's vectors.
fn dense_identity(embedder: &dyn Embedder) -> DenseIdentity {
    let label = embedder.label();
    DenseIdentity {
        operator: embedder.id().to_string(),
        config: embedder.config_hash(),
        label: label.name.clone(),
        dimensions: label.dimensions as usize,
    }
}
