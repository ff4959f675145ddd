//! Keyed memories over the service (seed 002): remember, recall, forget and
//! purge, each for the tenant the caller's key allows, with the data
//! directory's embedder. Writes of keyed memories are serialised (a
//! remember reads the key's current entry to keep its `created_at`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use strataflow::log::Timestamp;
use strataflow::operators::embedder::Embedder;
use strataflow::{Memory, PurgeOptions, RecallOptions, RememberEntry};

use super::error::from_memory;
use super::{Answer, Service};
use crate::http::auth::Caller;
use crate::http::error::ApiError;

/// `remember` a keyed memory (the namespace is in the path over HTTP).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberMemoryParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// The kind of memory (MCP only; over HTTP it is in the path).
    pub namespace: Option<String>,
    /// Unique within the namespace and tenant (1 to 256 bytes).
    pub id: String,
    /// The text to embed.
    pub text: String,
    /// Your JSON, kept with the entry.
    #[serde(default)]
    pub content: serde_json::Value,
    /// String pairs a recall can filter on.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// `recall` keyed memories most similar to a text.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallMemoryParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// The namespace searched (MCP only; over HTTP it is in the path).
    pub namespace: Option<String>,
    /// The text to compare with.
    pub text: String,
    /// Most matches, 1 to 1000 (default 10).
    pub limit: Option<u32>,
    /// Drop matches less similar than this (-1 to 1).
    pub min_similarity: Option<f32>,
    /// Ids never returned.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Only entries with every one of these pairs.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// `forget` one keyed memory.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetMemoryParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// Its namespace (MCP only; over HTTP it is in the path).
    pub namespace: Option<String>,
    /// Its id (MCP only; over HTTP it is in the path).
    pub id: Option<String>,
}

/// `purge` keyed memories by age.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PurgeMemoryParams {
    /// Tenant (default: the key's tenant).
    pub tenant: Option<String>,
    /// A duration before now (`30d`, `12h`, `90m`, `45s`) or an RFC 3339
    /// time: entries last written before it are removed, oldest first.
    pub older_than: String,
    /// Only this namespace (default: all of the tenant's).
    pub namespace: Option<String>,
    /// The most entries removed (default 1000).
    pub limit: Option<u32>,
}

/// The keyed-memory state of a service: the embedder, once resolved, and
/// the lock of keyed-memory writes.
#[derive(Default)]
pub struct Keyed {
    embedder: Mutex<Option<Arc<dyn Embedder>>>,
    writes: Mutex<()>,
}

/// The current time in UTC milliseconds: the one clock reading of keyed
/// memories, by `serve` and the command line (the library takes times from
/// its caller).
pub fn now() -> Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Timestamp(ms)
}

fn embedder(keyed: &Keyed, memory: &Memory) -> Result<Arc<dyn Embedder>, ApiError> {
    let mut slot = keyed
        .embedder
        .lock()
        .map_err(|_| ApiError::internal("the embedder lock is poisoned"))?;
    if let Some(e) = slot.as_ref() {
        return Ok(Arc::clone(e));
    }
    let e = memory.keyed_embedder(None).map_err(from_memory)?;
    *slot = Some(Arc::clone(&e));
    Ok(e)
}

fn required(value: Option<String>, field: &'static str) -> Result<String, ApiError> {
    value.ok_or_else(|| ApiError::invalid(format!("`{field}` is required")).at_field(field))
}

impl Service {
    /// Remembers a keyed memory in `namespace` (or `p.namespace`).
    pub async fn remember_memory(
        &self,
        caller: &Caller,
        namespace: Option<String>,
        p: RememberMemoryParams,
    ) -> Result<Answer, ApiError> {
        self.local_write("a keyed memory")?;
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let namespace = required(namespace.or(p.namespace), "namespace")?;
        let keyed = Arc::clone(&self.keyed);
        self.read(None, move |m| {
            let embedder = embedder(&keyed, m)?;
            let entry = RememberEntry {
                namespace,
                id: p.id,
                text: p.text,
                content: p.content,
                metadata: p.metadata.into_iter().collect(),
            };
            let _write = keyed
                .writes
                .lock()
                .map_err(|_| ApiError::internal("the keyed-memory lock is poisoned"))?;
            m.remember(&tenant, embedder.as_ref(), &entry, now())
                .map_err(from_memory)
        })
        .await
    }

    /// The keyed memories of `namespace` most similar to `p.text`.
    pub async fn recall_memory(
        &self,
        caller: &Caller,
        namespace: Option<String>,
        p: RecallMemoryParams,
    ) -> Result<Answer, ApiError> {
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let namespace = required(namespace.or(p.namespace), "namespace")?;
        let keyed = Arc::clone(&self.keyed);
        self.read(None, move |m| {
            let embedder = embedder(&keyed, m)?;
            let options = RecallOptions {
                limit: p.limit.unwrap_or(strataflow::DEFAULT_RECALL_LIMIT),
                min_similarity: p.min_similarity,
                exclude: p.exclude,
                metadata: p.metadata.into_iter().collect(),
            };
            let matches = m
                .recall(&tenant, embedder.as_ref(), &namespace, &p.text, &options)
                .map_err(from_memory)?;
            Ok(serde_json::json!({ "matches": matches }))
        })
        .await
    }

    /// Forgets one keyed memory; 404 when the key holds none.
    pub async fn forget_memory(
        &self,
        caller: &Caller,
        key: Option<(String, String)>,
        p: ForgetMemoryParams,
    ) -> Result<Answer, ApiError> {
        self.local_write("forgetting a keyed memory")?;
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let (namespace, id) = match key {
            Some(k) => k,
            None => (required(p.namespace, "namespace")?, required(p.id, "id")?),
        };
        let keyed = Arc::clone(&self.keyed);
        self.read(None, move |m| {
            let _write = keyed
                .writes
                .lock()
                .map_err(|_| ApiError::internal("the keyed-memory lock is poisoned"))?;
            match m
                .forget_memory(&tenant, &namespace, &id)
                .map_err(from_memory)?
            {
                Some(record) => Ok(serde_json::json!({"forgotten": true, "record": record})),
                None => Err(ApiError::not_found(format!(
                    "no keyed memory `{namespace}/{id}`"
                ))),
            }
        })
        .await
    }

    /// Purges keyed memories of the caller's tenant by age.
    pub async fn purge_memories(
        &self,
        caller: &Caller,
        p: PurgeMemoryParams,
    ) -> Result<Answer, ApiError> {
        self.local_write("a purge of keyed memories")?;
        let tenant = self.tenant_of(caller, p.tenant.as_deref())?;
        let cutoff = strataflow::older_than_cutoff(&p.older_than, now())
            .map_err(|e| ApiError::invalid(e.to_string()).at_field("older_than"))?;
        let options = PurgeOptions {
            namespace: p.namespace,
            limit: p.limit.unwrap_or(strataflow::DEFAULT_PURGE_LIMIT),
        };
        let keyed = Arc::clone(&self.keyed);
        self.read(None, move |m| {
            let _write = keyed
                .writes
                .lock()
                .map_err(|_| ApiError::internal("the keyed-memory lock is poisoned"))?;
            m.purge(&tenant, cutoff, &options).map_err(from_memory)
        })
        .await
    }

    /// One retention pass: purges every tenant's keyed memories last
    /// written longer than `older_than` ago, `limit` at a time until fewer
    /// remain. Returns how many.
    pub async fn retention(&self, older_than: std::time::Duration) -> Result<usize, ApiError> {
        self.local_write("keyed-memory retention")?;
        let keyed = Arc::clone(&self.keyed);
        let memory = Arc::clone(&self.memory);
        tokio::task::spawn_blocking(move || {
            let ms = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
            let cutoff = Timestamp(now().0.saturating_sub(ms));
            let options = PurgeOptions::default();
            let mut total = 0;
            for tenant in memory.tenants().map_err(from_memory)? {
                loop {
                    let _write = keyed
                        .writes
                        .lock()
                        .map_err(|_| ApiError::internal("the keyed-memory lock is poisoned"))?;
                    let r = memory
                        .purge(&tenant, cutoff, &options)
                        .map_err(from_memory)?;
                    total += r.purged;
                    if r.purged < options.limit as usize {
                        break;
                    }
                }
            }
            Ok(total)
        })
        .await
        .map_err(|e| ApiError::internal(format!("the retention task failed: {e}")))?
    }
}
