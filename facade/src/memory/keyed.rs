//! Keyed memories (seed 002): remember a text under `(tenant, namespace,
//! id)` with JSON content and string metadata, recall the entries most like
//! a text by cosine similarity, forget a key, purge by age. Every change is
//! a record ([`KeyedMemory`], [`Embedding`], [`MemoryPurge`]), so history,
//! audit, export and replay cover it; the current entries are the
//! [`KeyedMemoryState`] view, maintained from the log like the others.
//!
//! The embedder is a directory-level setting (configuration key
//! [`EMBEDDER_CONFIG`]), chosen at first use; [`embedder_from_spec`] is the
//! one place that turns a spec into an embedder.

use std::collections::BTreeMap;
use std::sync::Arc;

use strataflow_log::record::{
    Embedding, KeyedMemory, MemoryAction, MemoryPurge, MetadataPair, Record,
};
use strataflow_log::{Durability, RecordId, Timestamp};
use strataflow_materializers::keyed_memory::{KeyedMemoryState, MemoryEntry, RecallFilter};
use strataflow_operators::embedder::{EmbedError, Embedder, WordHash, word_hash};

use super::{Memory, MemoryError};

/// Configuration key of the directory's embedder spec.
pub const EMBEDDER_CONFIG: &str = "embedder";
/// The longest namespace or id, in bytes.
pub const MAX_KEY_BYTES: usize = 256;
/// Matches a recall returns when no limit is given.
pub const DEFAULT_RECALL_LIMIT: u32 = 10;
/// The most matches a recall returns.
pub const MAX_RECALL_LIMIT: u32 = 1000;
/// Entries a purge removes when no limit is given.
pub const DEFAULT_PURGE_LIMIT: u32 = 1000;

/// Why a keyed-memory call was refused or failed. Nothing is stored when
/// one is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyedMemoryError {
    /// A namespace or id is empty.
    #[error("{field} is empty")]
    Empty {
        /// `namespace` or `id`.
        field: &'static str,
    },
    /// A namespace or id is longer than [`MAX_KEY_BYTES`].
    #[error("{field} is {bytes} bytes, over the {MAX_KEY_BYTES}-byte limit")]
    KeyTooLong {
        /// `namespace` or `id`.
        field: &'static str,
        /// Its length.
        bytes: usize,
    },
    /// A metadata key is given twice.
    #[error("metadata key `{key}` is given twice")]
    DuplicateMetadata {
        /// The key.
        key: String,
    },
    /// A recall's limit is not 1..=1000.
    #[error("limit {value} is not in 1..={MAX_RECALL_LIMIT}")]
    Limit {
        /// The value given.
        value: u32,
    },
    /// A purge's limit is 0.
    #[error("purge limit must be at least 1")]
    PurgeLimit,
    /// A recall's `min_similarity` is not a number in -1..=1.
    #[error("min_similarity {value} is not a number in -1..=1")]
    MinSimilarity {
        /// The value given.
        value: f32,
    },
    /// The directory has no embedder and none was given.
    #[error("no embedder is configured for keyed memories: give one, e.g. --embedder word-hash@1")]
    NoEmbedder,
    /// An embedder spec is not one this build knows or is malformed.
    #[error("embedder `{spec}`: {reason}")]
    UnknownEmbedder {
        /// The spec.
        spec: String,
        /// What is wrong (the known specs are listed).
        reason: String,
    },
    /// A spec other than the directory's was given.
    #[error(
        "embedder `{given}` differs from the data directory's `{configured}`: vectors of two models are never compared"
    )]
    EmbedderMismatch {
        /// The directory's.
        configured: String,
        /// The one given.
        given: String,
    },
    /// An `older_than` is neither a duration (`30d`, `12h`, `90m`, `45s`)
    /// nor an RFC 3339 time.
    #[error("older_than `{value}` is neither a duration (30d, 12h, 90m, 45s) nor an RFC 3339 time")]
    OlderThan {
        /// The value given.
        value: String,
    },
    /// The embedding call failed: nothing was stored.
    #[error("embedding `{namespace}/{id}` failed, nothing stored: {source}")]
    Embed {
        /// Namespace.
        namespace: String,
        /// Id (empty for a recall's query).
        id: String,
        /// The embedder's error.
        source: EmbedError,
    },
}

impl From<KeyedMemoryError> for MemoryError {
    fn from(e: KeyedMemoryError) -> Self {
        Self::KeyedMemory(e)
    }
}

/// What a spec needs beyond itself: the log `openai-embeddings@1` records
/// its calls in, the model service it calls (the settings the chat
/// operators use, from a profile's model endpoint) and whether it may call
/// at all.
#[derive(Clone, Debug)]
pub struct EmbeddingService {
    /// The log of the `ModelCall` records.
    pub store: Arc<strataflow_log::Store>,
    /// The service (base URL, key variable, timeout, concurrency); `None`:
    /// no profile names one, and `openai-embeddings@1` is refused.
    pub settings: Option<strataflow_model::ModelSettings>,
    /// Only recorded calls are answered.
    pub offline: bool,
}

/// The specs this build knows, for error messages.
fn known_specs() -> &'static str {
    if cfg!(feature = "local-embeddings") {
        "word-hash@1[:DIMS], local-embeddings@1:PATH, openai-embeddings@1:MODEL:DIMS"
    } else {
        "word-hash@1[:DIMS], openai-embeddings@1:MODEL:DIMS (local-embeddings@1 needs the `local-embeddings` feature)"
    }
}

/// The embedder of a spec. Known: `word-hash@1[:DIMS]` (DIMS 1..=65536,
/// default 256); `local-embeddings@1:PATH` (a sentence-transformers folder,
/// with the default cargo feature `local-embeddings`);
/// `openai-embeddings@1:MODEL:DIMS` (label `openai/MODEL`, through
/// `service`). The single place where a spec becomes an embedder: other
/// embedders are added here.
///
/// # Errors
/// [`KeyedMemoryError::UnknownEmbedder`] naming the spec and why.
pub fn embedder_from_spec(
    spec: &str,
    service: Option<&EmbeddingService>,
) -> Result<Arc<dyn Embedder>, KeyedMemoryError> {
    let unknown = |reason: String| KeyedMemoryError::UnknownEmbedder {
        spec: spec.to_owned(),
        reason,
    };
    let (id, arg) = match spec.trim().split_once(':') {
        Some((id, arg)) => (id, Some(arg)),
        None => (spec.trim(), None),
    };
    if id == format!("{}@{}", word_hash::NAME, word_hash::VERSION) {
        let dims = match arg {
            None => word_hash::DEFAULT_DIMENSIONS,
            Some(d) => parse_dimensions(d)
                .ok_or_else(|| unknown(format!("dimensions `{d}` are not in 1..=65536")))?,
        };
        let e = WordHash::new(dims).map_err(|e| unknown(e.to_string()))?;
        return Ok(Arc::new(e));
    }
    if id == LOCAL_EMBEDDINGS {
        let Some(path) = arg.filter(|p| !p.is_empty()) else {
            return Err(unknown(
                "give the model folder: local-embeddings@1:PATH".to_owned(),
            ));
        };
        return local_embedder(path).map_err(unknown);
    }
    if id
        == format!(
            "{}@{}",
            strataflow_model::embeddings::NAME,
            strataflow_model::embeddings::VERSION
        )
    {
        let Some((model, dims)) = arg.and_then(|a| a.rsplit_once(':')) else {
            return Err(unknown(
                "give the model and its dimensions: openai-embeddings@1:MODEL:DIMS".to_owned(),
            ));
        };
        let dims = parse_dimensions(dims)
            .ok_or_else(|| unknown(format!("dimensions `{dims}` are not in 1..=65536")))?;
        let Some(service) = service else {
            return Err(unknown("no model service here".to_owned()));
        };
        let Some(settings) = &service.settings else {
            return Err(unknown(
                "no model service: the default profile names none (profile create --model NAME --base-url URL)"
                    .to_owned(),
            ));
        };
        let e = strataflow_model::OpenAiEmbedder::new(
            Arc::clone(&service.store),
            settings,
            strataflow_model::EmbeddingSettings::new(model, dims),
            service.offline,
        )
        .map_err(|e| unknown(e.to_string()))?;
        return Ok(Arc::new(e));
    }
    Err(unknown(format!(
        "unknown embedder; known: {}",
        known_specs()
    )))
}

/// `local-embeddings@1`'s id.
const LOCAL_EMBEDDINGS: &str = "local-embeddings@1";

fn parse_dimensions(d: &str) -> Option<u32> {
    d.parse::<u32>().ok().filter(|d| (1..=65_536).contains(d))
}

#[cfg(feature = "local-embeddings")]
fn local_embedder(path: &str) -> Result<Arc<dyn Embedder>, String> {
    let settings = strataflow_embedding_local::LocalSettings::new(path);
    strataflow_embedding_local::LocalEmbedder::load(&settings)
        .map(|e| Arc::new(e) as Arc<dyn Embedder>)
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "local-embeddings"))]
fn local_embedder(_: &str) -> Result<Arc<dyn Embedder>, String> {
    Err("this build has no local embeddings (cargo feature `local-embeddings`)".to_owned())
}

/// A duration written `N` then a unit: `s`, `m`, `h`, `d` or `w`
/// (`30d`, `12h`), N at least 1.
///
/// # Errors
/// [`KeyedMemoryError::OlderThan`] naming the text.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, KeyedMemoryError> {
    let bad = || KeyedMemoryError::OlderThan {
        value: text.to_owned(),
    };
    let t = text.trim();
    let unit = t.chars().last().ok_or_else(bad)?;
    let secs = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => 86_400,
        'w' => 604_800,
        _ => return Err(bad()),
    };
    let n: u64 = t
        .get(..t.len() - 1)
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .ok_or_else(bad)?;
    n.checked_mul(secs)
        .map(std::time::Duration::from_secs)
        .ok_or_else(bad)
}

/// The cutoff of a purge: an RFC 3339 time, or a [`parse_duration`]
/// before `now`.
///
/// # Errors
/// [`KeyedMemoryError::OlderThan`] naming the text.
pub fn older_than_cutoff(text: &str, now: Timestamp) -> Result<Timestamp, KeyedMemoryError> {
    if let Some(t) = strataflow_log::SourceTime::parse_rfc3339(text) {
        return Ok(Timestamp(t.utc_ms));
    }
    let d = parse_duration(text)?;
    let ms = i64::try_from(d.as_millis()).map_err(|_| KeyedMemoryError::OlderThan {
        value: text.to_owned(),
    })?;
    Ok(Timestamp(now.0.saturating_sub(ms)))
}

/// What [`Memory::remember`] stores.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RememberEntry {
    /// The kind of memory; a recall never crosses one.
    pub namespace: String,
    /// Unique within the namespace and tenant.
    pub id: String,
    /// The text embedded (kept, never searched as words).
    pub text: String,
    /// The caller's JSON (stored canonical).
    pub content: serde_json::Value,
    /// String pairs a recall can filter on.
    pub metadata: Vec<(String, String)>,
}

/// Options of [`Memory::recall`]. Filters apply before the ranking.
#[derive(Clone, Debug, PartialEq)]
pub struct RecallOptions {
    /// The most matches, 1..=1000 (default 10).
    pub limit: u32,
    /// Drops matches less similar than this (off by default).
    pub min_similarity: Option<f32>,
    /// Ids never returned.
    pub exclude: Vec<String>,
    /// Only entries with every one of these pairs.
    pub metadata: Vec<(String, String)>,
}

impl Default for RecallOptions {
    fn default() -> Self {
        Self {
            limit: DEFAULT_RECALL_LIMIT,
            min_similarity: None,
            exclude: Vec::new(),
            metadata: Vec::new(),
        }
    }
}

/// Options of [`Memory::purge`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PurgeOptions {
    /// Only this namespace (default: all of the tenant's).
    pub namespace: Option<String>,
    /// The most entries removed (default 1000).
    pub limit: u32,
}

impl Default for PurgeOptions {
    fn default() -> Self {
        Self {
            namespace: None,
            limit: DEFAULT_PURGE_LIMIT,
        }
    }
}

/// A stored entry, as remember and recall answer it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StoredMemory {
    /// Namespace.
    pub namespace: String,
    /// Id.
    pub id: String,
    /// The text that was embedded.
    pub text: String,
    /// The caller's JSON.
    pub content: serde_json::Value,
    /// String pairs.
    pub metadata: BTreeMap<String, String>,
    /// First remembered.
    pub created_at: Timestamp,
    /// Last written.
    pub updated_at: Timestamp,
    /// The `KeyedMemory` record.
    pub record: RecordId,
}

impl StoredMemory {
    fn of(namespace: &str, id: &str, e: &MemoryEntry) -> Self {
        Self {
            namespace: namespace.to_owned(),
            id: id.to_owned(),
            text: e.text.clone(),
            // default: stored content is canonical JSON written by remember.
            content: serde_json::from_str(&e.content).unwrap_or(serde_json::Value::Null),
            metadata: e.metadata.iter().cloned().collect(),
            created_at: Timestamp(e.created_at_ms),
            updated_at: Timestamp(e.updated_at_ms),
            record: e.record,
        }
    }
}

/// What [`Memory::remember`] wrote.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Remembered {
    /// The entry as stored.
    #[serde(flatten)]
    pub entry: StoredMemory,
    /// The `Embedding` record.
    pub embedding: RecordId,
    /// Whether it replaced an entry of the same key.
    pub replaced: bool,
    /// The embedder's label.
    pub label: String,
}

/// One match of [`Memory::recall`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RecallMatch {
    /// The entry.
    #[serde(flatten)]
    pub entry: StoredMemory,
    /// 1 − cosine distance, from −1 to 1.
    pub similarity: f32,
}

/// What [`Memory::purge`] removed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PurgeReport {
    /// How many entries (call again while it equals the limit).
    pub purged: usize,
    /// The `MemoryPurge` record (none when nothing was old enough).
    pub record: Option<RecordId>,
}

fn check_key(field: &'static str, value: &str) -> Result<(), KeyedMemoryError> {
    if value.is_empty() {
        return Err(KeyedMemoryError::Empty { field });
    }
    if value.len() > MAX_KEY_BYTES {
        return Err(KeyedMemoryError::KeyTooLong {
            field,
            bytes: value.len(),
        });
    }
    Ok(())
}

fn sorted_pairs(pairs: &[(String, String)]) -> Result<Vec<MetadataPair>, KeyedMemoryError> {
    let mut sorted: Vec<MetadataPair> = pairs
        .iter()
        .map(|(key, value)| MetadataPair {
            key: key.clone(),
            value: value.clone(),
        })
        .collect();
    sorted.sort();
    for w in sorted.windows(2) {
        if let [a, b] = w
            && a.key == b.key
        {
            return Err(KeyedMemoryError::DuplicateMetadata { key: a.key.clone() });
        }
    }
    Ok(sorted)
}

impl Memory {
    /// What [`embedder_from_spec`] needs from this `Memory`: its log, the
    /// default profile's model service and whether it is offline.
    ///
    /// # Errors
    /// The store's, reading the default profile.
    pub fn embedding_service(&self) -> Result<EmbeddingService, MemoryError> {
        let profile = self.default_profile()?;
        Ok(self.embedding_service_for(&profile))
    }

    /// [`Memory::embedding_service`] with `profile`'s model service.
    pub(crate) fn embedding_service_for(
        &self,
        profile: &strataflow_operators::profile::Profile,
    ) -> EmbeddingService {
        EmbeddingService {
            store: Arc::clone(&self.store),
            settings: profile.model.as_ref().map(super::models::settings),
            offline: self.is_offline(),
        }
    }

    /// The embedder of keyed memories: `spec` when given (stored as the
    /// directory's when it has none, refused when it differs), else the
    /// directory's.
    ///
    /// # Errors
    /// [`KeyedMemoryError::NoEmbedder`], [`KeyedMemoryError::UnknownEmbedder`]
    /// or [`KeyedMemoryError::EmbedderMismatch`]; the store's errors.
    pub fn keyed_embedder(&self, spec: Option<&str>) -> Result<Arc<dyn Embedder>, MemoryError> {
        let configured = self.store.config(EMBEDDER_CONFIG)?;
        match (spec, configured) {
            (Some(given), Some(configured)) if given.trim() != configured => {
                Err(KeyedMemoryError::EmbedderMismatch {
                    configured,
                    given: given.trim().to_owned(),
                }
                .into())
            }
            (Some(given), configured) => {
                let e = embedder_from_spec(given, Some(&self.embedding_service()?))?;
                if configured.is_none() {
                    self.store.set_config(EMBEDDER_CONFIG, given.trim())?;
                }
                Ok(e)
            }
            (None, Some(configured)) => Ok(embedder_from_spec(
                &configured,
                Some(&self.embedding_service()?),
            )?),
            (None, None) => Err(KeyedMemoryError::NoEmbedder.into()),
        }
    }

    /// The keyed-memory view of a tenant, brought up to the end of the log.
    pub fn keyed_memories(&self, tenant: &str) -> Result<KeyedMemoryState, MemoryError> {
        Ok(self.refresh_whole::<KeyedMemoryState>(tenant)?.0)
    }

    /// Remembers `entry` for `tenant` at `now`: embeds its text, then writes
    /// a [`KeyedMemory`] and its [`Embedding`] in one durable append. An
    /// existing key is replaced, keeping its `created_at`. An empty or
    /// over-long namespace or id, or a metadata key given twice, is refused
    /// before any embedding call; a failed embedding call stores nothing.
    ///
    /// # Errors
    /// [`KeyedMemoryError`] (as [`MemoryError::KeyedMemory`]); the store's.
    pub fn remember(
        &self,
        tenant: &str,
        embedder: &dyn Embedder,
        entry: &RememberEntry,
        now: Timestamp,
    ) -> Result<Remembered, MemoryError> {
        check_key("namespace", &entry.namespace)?;
        check_key("id", &entry.id)?;
        let metadata = sorted_pairs(&entry.metadata)?;
        let content = strataflow_log::json::canonical_json(&entry.content);
        let vector = embedder
            .embed(&[entry.text.as_str()])
            .and_then(|mut v| {
                let label = embedder.label();
                strataflow_operators::embedder::check_vectors(label, 1, &v)?;
                Ok(v.pop().unwrap_or_default())
            })
            .map_err(|source| KeyedMemoryError::Embed {
                namespace: entry.namespace.clone(),
                id: entry.id.clone(),
                source,
            })?;
        let view = self.keyed_memories(tenant)?;
        let current = view.get(&entry.namespace, &entry.id);
        let created_at = current.map_or(now, |e| Timestamp(e.created_at_ms));
        let memory = Record::KeyedMemory(KeyedMemory {
            tenant: tenant.to_owned(),
            namespace: entry.namespace.clone(),
            key: entry.id.clone(),
            action: MemoryAction::Remember {
                text: entry.text.clone(),
                content,
                metadata,
                created_at,
                updated_at: now,
            },
            previous: view.last_record(&entry.namespace, &entry.id),
        });
        let (record, _) = strataflow_log::envelope::encode_with_id(&memory)?;
        let label = embedder.label().name.clone();
        let embedding = Embedding::new(
            tenant,
            &label,
            &vector,
            record,
            &embedder.id().to_string(),
            embedder.config_hash(),
        )
        .map_err(|e| KeyedMemoryError::Embed {
            namespace: entry.namespace.clone(),
            id: entry.id.clone(),
            source: EmbedError::Failed(e.to_string()),
        })?;
        let receipt = self
            .store
            .append(&[memory, Record::Embedding(embedding)], Durability::Sync)?;
        let embedding = receipt.records.get(1).map(|a| a.id).unwrap_or_default();
        let (keyed, _) = self.refresh_whole::<KeyedMemoryState>(tenant)?;
        let stored = keyed
            .get(&entry.namespace, &entry.id)
            .map(|e| StoredMemory::of(&entry.namespace, &entry.id, e))
            .ok_or(MemoryError::MissingRecord {
                id: record,
                of: None,
            })?;
        Ok(Remembered {
            entry: stored,
            embedding,
            replaced: current.is_some(),
            label,
        })
    }

    /// The entries of `tenant`'s `namespace` most like `text` under the
    /// embedder's label: most similar first, equal similarities by id,
    /// never across namespace, tenant or label.
    ///
    /// # Errors
    /// [`KeyedMemoryError::Limit`], [`KeyedMemoryError::MinSimilarity`],
    /// [`KeyedMemoryError::Embed`]; the store's.
    pub fn recall(
        &self,
        tenant: &str,
        embedder: &dyn Embedder,
        namespace: &str,
        text: &str,
        options: &RecallOptions,
    ) -> Result<Vec<RecallMatch>, MemoryError> {
        if !(1..=MAX_RECALL_LIMIT).contains(&options.limit) {
            return Err(KeyedMemoryError::Limit {
                value: options.limit,
            }
            .into());
        }
        if let Some(m) = options.min_similarity
            && !(-1.0..=1.0).contains(&m)
        {
            return Err(KeyedMemoryError::MinSimilarity { value: m }.into());
        }
        let embed_error = |source| KeyedMemoryError::Embed {
            namespace: namespace.to_owned(),
            id: String::new(),
            source,
        };
        let label = embedder.label();
        let query = embedder
            .embed(&[text])
            .and_then(|mut v| {
                strataflow_operators::embedder::check_vectors(label, 1, &v)?;
                Ok(v.pop().unwrap_or_default())
            })
            .map_err(embed_error)?;
        let view = self.keyed_memories(tenant)?;
        let filter = RecallFilter {
            exclude: options.exclude.clone(),
            metadata: options.metadata.clone(),
        };
        Ok(view
            .recall(
                namespace,
                &label.name,
                &query,
                &filter,
                options.limit as usize,
                options.min_similarity,
            )
            .into_iter()
            .map(|(id, e, similarity)| RecallMatch {
                entry: StoredMemory::of(namespace, id, e),
                similarity,
            })
            .collect())
    }

    /// The current entry of a key, if any.
    pub fn memory_entry(
        &self,
        tenant: &str,
        namespace: &str,
        id: &str,
    ) -> Result<Option<StoredMemory>, MemoryError> {
        Ok(self
            .keyed_memories(tenant)?
            .get(namespace, id)
            .map(|e| StoredMemory::of(namespace, id, e)))
    }

    /// Forgets a key: a [`KeyedMemory`] `Forget` record. Returns the record,
    /// or `None` (and writes nothing) when the key holds no entry.
    ///
    /// # Errors
    /// The store's.
    pub fn forget_memory(
        &self,
        tenant: &str,
        namespace: &str,
        id: &str,
    ) -> Result<Option<RecordId>, MemoryError> {
        let view = self.keyed_memories(tenant)?;
        let Some(current) = view.get(namespace, id) else {
            return Ok(None);
        };
        let record = Record::KeyedMemory(KeyedMemory {
            tenant: tenant.to_owned(),
            namespace: namespace.to_owned(),
            key: id.to_owned(),
            action: MemoryAction::Forget,
            previous: Some(current.record),
        });
        let receipt = self.store.append(&[record], Durability::Sync)?;
        Ok(receipt.records.first().map(|a| a.id))
    }

    /// Purges `tenant`'s entries last written before `older_than`
    /// (`updated_at`), oldest first, up to `options.limit`: one
    /// [`MemoryPurge`] record listing them. Returns how many.
    ///
    /// # Errors
    /// [`KeyedMemoryError::PurgeLimit`]; the store's.
    pub fn purge(
        &self,
        tenant: &str,
        older_than: Timestamp,
        options: &PurgeOptions,
    ) -> Result<PurgeReport, MemoryError> {
        if options.limit == 0 {
            return Err(KeyedMemoryError::PurgeLimit.into());
        }
        let view = self.keyed_memories(tenant)?;
        let purged = view.purge_candidates(
            options.namespace.as_deref(),
            older_than.0,
            options.limit as usize,
        );
        if purged.is_empty() {
            return Ok(PurgeReport {
                purged: 0,
                record: None,
            });
        }
        let count = purged.len();
        let record = Record::MemoryPurge(MemoryPurge {
            tenant: tenant.to_owned(),
            namespace: options.namespace.clone(),
            older_than,
            limit: options.limit,
            purged,
        });
        let receipt = self.store.append(&[record], Durability::Sync)?;
        Ok(PurgeReport {
            purged: count,
            record: receipt.records.first().map(|a| a.id),
        })
    }

    /// Tenants that hold keyed-memory records, sorted.
    pub(crate) fn keyed_memory_tenants(&self) -> Result<Vec<String>, MemoryError> {
        let mut tenants = std::collections::BTreeSet::new();
        for kind in [
            strataflow_log::record::RecordKind::KeyedMemory,
            strataflow_log::record::RecordKind::MemoryPurge,
        ] {
            if self.store.count(kind)? == 0 {
                continue;
            }
            for item in self.store.ids_of_kind(kind) {
                let (_, id) = item?;
                if let Some(stored) = self.store.get(&id)? {
                    tenants.insert(stored.record.tenant().to_owned());
                }
            }
        }
        Ok(tenants.into_iter().collect())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_in_one_place() {
        let e = embedder_from_spec("word-hash@1", None).unwrap();
        assert_eq!(e.label().dimensions, word_hash::DEFAULT_DIMENSIONS);
        let e = embedder_from_spec(" word-hash@1:64 ", None).unwrap();
        assert_eq!(e.label().name, "strataflow/word-hash-64");
        for bad in [
            "word-hash@1:0",
            "word-hash@1:x",
            "word-hash@2",
            "openai-embeddings@9",
            "openai-embeddings@1",
            "openai-embeddings@1:text-embedding-3-small",
            "openai-embeddings@1:m:0",
            "openai-embeddings@1:m:8",
            "local-embeddings@1",
            "local-embeddings@1:/nonexistent/model/folder",
            "",
        ] {
            let err = embedder_from_spec(bad, None).err().unwrap();
            assert!(
                matches!(&err, KeyedMemoryError::UnknownEmbedder { spec, .. } if spec == bad),
                "{bad}: {err}"
            );
        }
        let err = embedder_from_spec("nope@1", None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("word-hash@1[:DIMS]"), "{err}");
        assert!(err.contains("openai-embeddings@1:MODEL:DIMS"), "{err}");
    }

    #[test]
    fn durations_and_cutoffs() {
        assert_eq!(parse_duration("30d").unwrap().as_secs(), 30 * 86_400);
        assert_eq!(parse_duration("90m").unwrap().as_secs(), 5_400);
        assert_eq!(parse_duration("2w").unwrap().as_secs(), 14 * 86_400);
        for bad in ["", "d", "0s", "-1h", "1y", "1.5h", "soon"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        let now = Timestamp(10_000_000);
        assert_eq!(
            older_than_cutoff("1h", now).unwrap(),
            Timestamp(10_000_000 - 3_600_000)
        );
        assert_eq!(
            older_than_cutoff("1970-01-01T00:00:01Z", now).unwrap(),
            Timestamp(1_000)
        );
        assert!(matches!(
            older_than_cutoff("later", now),
            Err(KeyedMemoryError::OlderThan { value }) if value == "later"
        ));
    }
}
