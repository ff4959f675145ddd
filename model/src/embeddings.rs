//! `openai-embeddings@1`: the OpenAI-compatible embeddings API (OpenAI,
//! Ollama, vLLM, text-embeddings-inference, llama.cpp) as an [`Embedder`].
//!
//! Texts are sent in batches of `batch_size` as `POST {base_url}/embeddings`
//! with `{"input":[...],"model":...}` (canonical JSON); the answer's
//! `data[i].embedding` are put in the order of `data[i].index`. Batches go
//! out at once, at most `concurrency` in flight, retried like the chat
//! gateway (the same client: 429, 5xx, timeouts, `Retry-After`).
//!
//! Every request and response is a `ModelCall` record, looked up first by
//! its key ([`model_call_key`] of the operator, the model and the canonical
//! request): a recorded batch is never asked again, and offline a batch that
//! is not recorded is [`EmbedError::Offline`] with nothing asked. A response
//! is checked before it is recorded: a wrong count, a wrong length or a
//! non-finite value is refused and nothing is written.

use std::sync::Arc;

use serde_json::{Value, json};
use strataflow_log::json::canonical_json;
use strataflow_log::record::{ModelCall, Record};
use strataflow_log::{Digest, Durability, Store};
use strataflow_operators::embedder::{EmbedError, Embedder, EmbeddingLabel, check_vectors};
use strataflow_operators::model::{ModelError, model_call_key};
use strataflow_operators::operator::{OperatorId, config_hash};

use super::client::{Completion, ModelClient};
use super::gateway::Online;
use super::settings::ModelSettings;
use super::stats::{Counters, ModelCallStats};

/// The operator's name.
pub const NAME: &str = "openai-embeddings";
/// Its one version.
pub const VERSION: u32 = 1;
/// Texts per request when the settings name none.
pub const DEFAULT_BATCH_SIZE: usize = 64;

/// What the embeddings operator asks for; the service itself (base URL, key
/// variable, timeout, retries, concurrency) is the [`ModelSettings`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EmbeddingSettings {
    /// The model sent in every request, e.g. `text-embedding-3-small`.
    pub model: String,
    /// The label's provider: the label is `<provider>/<model>`, e.g.
    /// `openai/text-embedding-3-small` or `ollama/nomic-embed-text`.
    pub provider: String,
    /// The length of every vector; an answer of another length is refused.
    pub dimensions: u32,
    /// Texts per request (at least 1).
    pub batch_size: usize,
}

impl EmbeddingSettings {
    /// Settings for `model` of `dimensions`, provider `openai`, the default
    /// batch size.
    pub fn new(model: &str, dimensions: u32) -> Self {
        Self {
            model: model.to_owned(),
            provider: "openai".to_owned(),
            dimensions,
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }
}

/// `openai-embeddings@1` over a log and an OpenAI-compatible service.
pub struct OpenAiEmbedder {
    store: Arc<Store>,
    online: Option<Online>,
    settings: EmbeddingSettings,
    label: EmbeddingLabel,
    counters: Counters,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("label", &self.label)
            .field("client", &self.online.as_ref().map(|o| &o.client))
            .finish_non_exhaustive()
    }
}

impl OpenAiEmbedder {
    /// An embedder recording into `store`. Offline it answers only recorded
    /// batches and builds no client (the API key is not read).
    ///
    /// # Errors
    /// [`ModelError::Config`] for a bad base URL, a missing API key variable,
    /// a batch size or dimensions of 0, or an empty model name.
    pub fn new(
        store: Arc<Store>,
        service: &ModelSettings,
        settings: EmbeddingSettings,
        offline: bool,
    ) -> Result<Self, ModelError> {
        let problem = if settings.batch_size == 0 {
            Some("the embeddings batch size must be at least 1")
        } else if settings.dimensions == 0 {
            Some("the embeddings dimensions must be at least 1")
        } else if settings.model.trim().is_empty() {
            Some("the embeddings model is empty")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(ModelError::Config {
                setting: ModelError::SETTING_RUNTIME,
                problem: problem.to_owned(),
            });
        }
        let online = if offline {
            None
        } else {
            Some(Online::start(service)?)
        };
        let label = EmbeddingLabel::new(
            &format!("{}/{}", settings.provider, settings.model),
            settings.dimensions,
        );
        Ok(Self {
            store,
            online,
            settings,
            label,
            counters: Counters::default(),
        })
    }

    /// Requests made, served from the log and failed since it was built.
    pub fn stats(&self) -> ModelCallStats {
        self.counters.snapshot()
    }

    /// The canonical request of a batch (what is sent, recorded and keyed).
    pub fn request(&self, texts: &[&str]) -> String {
        canonical_json(&json!({"model": self.settings.model, "input": texts}))
    }

    /// The vectors of a recorded or fresh response, checked against the
    /// label and the batch.
    fn vectors_of(&self, response: &str, asked: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = parse_embeddings(response)?;
        check_vectors(&self.label, asked, &vectors)?;
        Ok(vectors)
    }

    fn recorded(&self, key: &Digest) -> Result<Option<ModelCall>, EmbedError> {
        self.store
            .model_call(key)
            .map(|found| found.map(|(_, call)| call))
            .map_err(|e| EmbedError::Failed(format!("reading recorded model call {key}: {e}")))
    }

    fn embed_batches(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let batches: Vec<&[&str]> = texts.chunks(self.settings.batch_size).collect();
        let mut answers: Vec<Option<Vec<Vec<f32>>>> = vec![None; batches.len()];
        // (batch index, key, canonical request) of every batch the log lacks.
        let mut missing = Vec::new();
        for (i, batch) in batches.iter().enumerate() {
            let request = self.request(batch);
            let key = model_call_key(&self.id(), &self.settings.model, &request);
            match self.recorded(&key)? {
                Some(call) => {
                    let vectors = self.vectors_of(&call.response, batch.len())?;
                    self.counters.served_from_log();
                    if let Some(slot) = answers.get_mut(i) {
                        *slot = Some(vectors);
                    }
                }
                None => missing.push((i, key, request)),
            }
        }
        if let Some((_, key, _)) = missing.first() {
            let Some(online) = &self.online else {
                return Err(EmbedError::Offline {
                    key: key.to_string(),
                });
            };
            let jobs: Vec<_> = missing
                .iter()
                .map(|(_, _, request)| {
                    let body = request.clone().into_bytes();
                    move |client: Arc<ModelClient>| async move { client.embeddings(&body).await }
                })
                .collect();
            let results = online.wait_all(jobs);
            let mut first_error = None;
            for ((i, key, request), result) in missing.into_iter().zip(results) {
                let asked = batches.get(i).map_or(0, |b| b.len());
                match self.record(key, request, result, asked) {
                    Ok(vectors) => {
                        if let Some(slot) = answers.get_mut(i) {
                            *slot = Some(vectors);
                        }
                    }
                    Err(e) => {
                        self.counters.failed();
                        first_error.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = first_error {
                return Err(e);
            }
        }
        Ok(answers.into_iter().flatten().flatten().collect())
    }

    /// Checks a fresh response and records it durably (before its vectors
    /// are used); a refused one writes nothing.
    fn record(
        &self,
        key: Digest,
        request: String,
        result: Result<Completion, ModelError>,
        asked: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let completion = result.map_err(|e| EmbedError::Failed(e.to_string()))?;
        self.vectors_of(&completion.body, asked)?;
        let call = ModelCall {
            request_hash: key,
            operator: self.id().to_string(),
            model: self.settings.model.clone(),
            request,
            response: completion.body,
            usage: completion.usage,
        };
        self.store
            .append(&[Record::ModelCall(call)], Durability::Sync)
            .map_err(|e| EmbedError::Failed(format!("recording embedding call {key}: {e}")))?;
        self.counters.made(completion.usage, completion.attempts);
        // Answer from what the log holds (the first recorded call wins).
        let stored = self.recorded(&key)?.ok_or_else(|| {
            EmbedError::Failed(format!(
                "embedding call {key} was appended but is not indexed"
            ))
        })?;
        self.vectors_of(&stored.response, asked)
    }
}

/// The vectors of an embeddings response, in the order of their `index`
/// (position in `data` when absent).
///
/// # Errors
/// [`EmbedError::Failed`] naming what is missing.
pub fn parse_embeddings(body: &str) -> Result<Vec<Vec<f32>>, EmbedError> {
    let bad = |what: String| EmbedError::Failed(format!("embeddings response: {what}"));
    let value: Value = serde_json::from_str(body).map_err(|e| bad(format!("not JSON: {e}")))?;
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `data` array".to_owned()))?;
    let mut rows = Vec::with_capacity(data.len());
    for (pos, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            None => pos as u64,
            Some(i) => i
                .as_u64()
                .ok_or_else(|| bad(format!("data[{pos}].index is not a count")))?,
        };
        let embedding = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(format!("data[{pos}] has no `embedding` array")))?;
        let vector = embedding
            .iter()
            .enumerate()
            .map(|(j, x)| {
                x.as_f64()
                    .map(|x| x as f32)
                    .ok_or_else(|| bad(format!("data[{pos}].embedding[{j}] is not a number")))
            })
            .collect::<Result<Vec<f32>, _>>()?;
        rows.push((index, vector));
    }
    rows.sort_by_key(|(index, _)| *index);
    if let Some(pos) = rows
        .iter()
        .enumerate()
        .position(|(pos, (index, _))| *index != pos as u64)
    {
        return Err(bad(format!(
            "the indexes are not 0..{} (no index {pos})",
            rows.len()
        )));
    }
    Ok(rows.into_iter().map(|(_, v)| v).collect())
}

impl Embedder for OpenAiEmbedder {
    fn id(&self) -> OperatorId {
        OperatorId::new(NAME, VERSION)
    }

    fn calls(&self) -> strataflow_operators::embedder::EmbedCalls {
        let s = self.stats();
        strataflow_operators::embedder::EmbedCalls {
            served_from_log: s.served_from_log,
            failed: s.failed,
            retries: s.retries,
        }
    }

    /// Covers the model, the label and the dimensions: what determines the
    /// vectors. The base URL, the key and the batch size do not.
    fn config_hash(&self) -> Digest {
        config_hash(
            &self.id(),
            &canonical_json(&json!({
                "dimensions": self.settings.dimensions,
                "label": self.label.name,
                "model": self.settings.model,
            })),
        )
    }

    fn label(&self) -> &EmbeddingLabel {
        &self.label
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let vectors = self.embed_batches(texts)?;
        check_vectors(&self.label, texts.len(), &vectors)?;
        Ok(vectors)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_in_index_order() {
        let body =
            r#"{"data":[{"index":1,"embedding":[0.0,1.0]},{"index":0,"embedding":[1.0,0.5]}]}"#;
        assert_eq!(
            parse_embeddings(body).unwrap(),
            [vec![1.0, 0.5], vec![0.0, 1.0]]
        );
        let gap = r#"{"data":[{"index":1,"embedding":[0.0]},{"index":2,"embedding":[1.0]}]}"#;
        assert!(parse_embeddings(gap).is_err());
        assert!(parse_embeddings(r#"{"data":[{"index":0}]}"#).is_err());
    }
}
