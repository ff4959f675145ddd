//! The model service behind model-backed profiles: one recording gateway
//! per endpoint, shared by every run of this `Memory`, and the call totals
//! `status` reports.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strataflow_model::{
    ModelCallStats, ModelSettings, RecordingGateway, SharedCalls, model_call_totals,
};
use strataflow_operators::model::{ModelError, ModelGateway, ModelReply, ModelRequest};
use strataflow_operators::profile::{ModelEndpoint, Profile, Registry};

use super::{Memory, MemoryError};

/// Config key of the counters the log cannot tell (requests served from
/// recorded calls, failed requests, retries), summed over runs.
const COUNTERS_KEY: &str = "model.counters";

/// Model calls of a data directory, for `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModelCallTotals {
    /// Calls made to a model service and recorded (paid for).
    pub made: u64,
    /// Requests answered from a recorded call, with no HTTP request.
    pub served_from_log: u64,
    /// Requests answered from a call another process made (a cluster's
    /// calls stream), recorded here with no HTTP request; not in `made`.
    pub served_from_shared: u64,
    /// Requests that ended in an error (service unavailable after retries,
    /// unusable answer, offline miss).
    pub failed: u64,
    /// HTTP requests retried beyond the first attempt of each call.
    pub retries: u64,
    /// Prompt tokens of the recorded calls (those copied from other
    /// processes included).
    pub prompt_tokens: u64,
    /// Completion tokens of the recorded calls (likewise).
    pub completion_tokens: u64,
}

/// The counters the log does not hold, as stored under [`COUNTERS_KEY`].
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct RunCounters {
    served_from_log: u64,
    #[serde(default)]
    served_from_shared: u64,
    failed: u64,
    retries: u64,
}

/// A recording gateway built on the first request, so that commands that
/// only read a model-backed profile (`plan`, `status`, `events`, `diff`,
/// search) need no API key and no client; a configuration error (a missing
/// key variable) surfaces at the first call, as a halt.
struct LazyGateway {
    store: Arc<strataflow_log::Store>,
    settings: ModelSettings,
    offline: bool,
    shared: Option<Arc<dyn SharedCalls>>,
    gateway: std::sync::OnceLock<Result<RecordingGateway, ModelError>>,
}

impl LazyGateway {
    fn connected(&self) -> &Result<RecordingGateway, ModelError> {
        self.gateway.get_or_init(|| {
            let gateway =
                RecordingGateway::new(self.store.clone(), self.settings.clone(), self.offline)?;
            Ok(match &self.shared {
                Some(shared) => gateway.with_shared_calls(Arc::clone(shared)),
                None => gateway,
            })
        })
    }

    fn stats(&self) -> ModelCallStats {
        match self.gateway.get() {
            Some(Ok(gateway)) => gateway.stats(),
            _ => ModelCallStats::default(),
        }
    }
}

impl ModelGateway for LazyGateway {
    fn complete(&self, request: &ModelRequest, subject: &str) -> Result<ModelReply, ModelError> {
        match self.connected() {
            Ok(gateway) => gateway.complete(request, subject),
            Err(e) => Err(e.clone()),
        }
    }
}

/// One gateway and the part of its counters already added to the totals.
struct Shared {
    gateway: Arc<LazyGateway>,
    saved: ModelCallStats,
}

/// The gateways of a `Memory`, by endpoint.
#[derive(Default)]
pub(super) struct Gateways {
    offline: bool,
    shared: Option<Arc<dyn SharedCalls>>,
    by_endpoint: Mutex<BTreeMap<String, Shared>>,
}

/// Stands in for the model when a profile is only checked (saved, listed):
/// it answers nothing.
struct Unconnected;

impl ModelGateway for Unconnected {
    fn complete(&self, _: &ModelRequest, subject: &str) -> Result<ModelReply, ModelError> {
        Err(ModelError::Config {
            setting: ModelError::SETTING_RUNTIME,
            problem: format!("no model service connected (request for {subject})"),
        })
    }
}

/// The registry a profile is checked against: the embedded operators and
/// the model-backed ones (unconnected).
pub(super) fn checking_registry(base: &Registry, profile: &Profile) -> Registry {
    let mut registry = base.clone();
    let model = profile
        .model
        .as_ref()
        .map_or("unconfigured", |m| m.model.as_str());
    strataflow_operators::llm::register(&mut registry, Arc::new(Unconnected), model);
    registry
}

pub(super) fn settings(endpoint: &ModelEndpoint) -> ModelSettings {
    ModelSettings {
        base_url: endpoint.base_url.clone(),
        model: endpoint.model.clone(),
        api_key_env: endpoint.api_key_env.clone(),
        timeout: Duration::from_secs(u64::from(endpoint.timeout_secs.max(1))),
        concurrency: usize::try_from(endpoint.concurrency.max(1)).unwrap_or(1),
        ..ModelSettings::default()
    }
}

impl Memory {
    /// Never call a model: model-backed operators are served only from
    /// recorded calls, and a missing one stops the run with an error naming
    /// the block.
    /// Gateways already connected are dropped (their counters saved first),
    /// so the setting holds for every later call.
    pub fn set_offline(&mut self, offline: bool) -> Result<(), MemoryError> {
        if self.gateways.offline != offline {
            self.drop_gateways()?;
        }
        self.gateways.offline = offline;
        Ok(())
    }

    /// Looks model requests up in `shared` (calls made by other processes,
    /// e.g. a cluster's calls stream) after the log and before the model,
    /// and offers it every call made; the call it keeps is the one
    /// recorded (see [`SharedCalls`]). `None` stops sharing. Gateways
    /// already connected are dropped (their counters saved first), so the
    /// setting holds for every later call.
    pub fn set_shared_calls(
        &mut self,
        shared: Option<Arc<dyn SharedCalls>>,
    ) -> Result<(), MemoryError> {
        self.drop_gateways()?;
        self.gateways.shared = shared;
        Ok(())
    }

    /// Drops the connected gateways, their counters saved first, so that
    /// the next call connects with the current settings.
    fn drop_gateways(&mut self) -> Result<(), MemoryError> {
        self.save_model_counters()?;
        self.gateways
            .by_endpoint
            .get_mut()
            .map_err(|_| MemoryError::GatewayPoisoned)?
            .clear();
        Ok(())
    }

    /// Whether this `Memory` is offline.
    pub fn is_offline(&self) -> bool {
        self.gateways.offline
    }

    /// The registry resolving `profile`: for a model-backed profile, the
    /// model operators connected to its endpoint's gateway.
    pub(super) fn registry_for(&self, profile: &Profile) -> Result<Registry, MemoryError> {
        if !profile.uses_model() {
            return Ok(self.registry.clone());
        }
        let Some(endpoint) = &profile.model else {
            return Err(super::ProfileError::ModelMissing {
                name: profile.name.clone(),
            }
            .into());
        };
        let gateway = self.gateway(endpoint)?;
        let mut registry = self.registry.clone();
        strataflow_operators::llm::register(&mut registry, gateway, &endpoint.model);
        Ok(registry)
    }

    pub(super) fn gateway(
        &self,
        endpoint: &ModelEndpoint,
    ) -> Result<Arc<dyn ModelGateway>, MemoryError> {
        let key = format!(
            "{}\u{0}{}\u{0}{}",
            endpoint.base_url,
            endpoint.model,
            // default: No key variable: the empty part of the gateway key.
            endpoint.api_key_env.as_deref().unwrap_or_default()
        );
        let mut gateways = self
            .gateways
            .by_endpoint
            .lock()
            .map_err(|_| MemoryError::GatewayPoisoned)?;
        if let Some(shared) = gateways.get(&key) {
            return Ok(shared.gateway.clone());
        }
        let gateway = Arc::new(LazyGateway {
            store: self.store.clone(),
            settings: settings(endpoint),
            offline: self.gateways.offline,
            shared: self.gateways.shared.clone(),
            gateway: std::sync::OnceLock::new(),
        });
        gateways.insert(
            key,
            Shared {
                gateway: gateway.clone(),
                saved: ModelCallStats::default(),
            },
        );
        Ok(gateway)
    }

    /// Adds what this `Memory`'s gateways counted since the last save to the
    /// data directory's totals (served from the log, failed, retries). Runs
    /// call it when they end.
    pub(super) fn save_model_counters(&self) -> Result<(), MemoryError> {
        let mut gateways = self
            .gateways
            .by_endpoint
            .lock()
            .map_err(|_| MemoryError::GatewayPoisoned)?;
        let mut delta = RunCounters::default();
        for shared in gateways.values_mut() {
            let now = shared.gateway.stats();
            delta.served_from_log += now.served_from_log - shared.saved.served_from_log;
            delta.served_from_shared += now.served_from_shared - shared.saved.served_from_shared;
            delta.failed += now.failed - shared.saved.failed;
            delta.retries += now.retries - shared.saved.retries;
            shared.saved = now;
        }
        // The lock is held while the totals are read and written back.
        let result = self.add_run_counters(delta);
        drop(gateways);
        result
    }

    /// Adds an embedder's requests (see
    /// [`strataflow_operators::embedder::Embedder::calls`]) to the data
    /// directory's model call totals.
    pub(super) fn add_embed_calls(
        &self,
        calls: strataflow_operators::embedder::EmbedCalls,
    ) -> Result<(), MemoryError> {
        // Held like `save_model_counters` holds it: one update at a time.
        let gateways = self
            .gateways
            .by_endpoint
            .lock()
            .map_err(|_| MemoryError::GatewayPoisoned)?;
        let result = self.add_run_counters(RunCounters {
            served_from_log: calls.served_from_log,
            served_from_shared: 0,
            failed: calls.failed,
            retries: calls.retries,
        });
        drop(gateways);
        result
    }

    /// Adds `delta` to the stored totals (the caller holds the gateways'
    /// lock).
    fn add_run_counters(&self, delta: RunCounters) -> Result<(), MemoryError> {
        if delta.served_from_log + delta.served_from_shared + delta.failed + delta.retries == 0 {
            return Ok(());
        }
        let mut stored = self.run_counters()?;
        stored.served_from_log += delta.served_from_log;
        stored.served_from_shared += delta.served_from_shared;
        stored.failed += delta.failed;
        stored.retries += delta.retries;
        let text = serde_json::to_string(&stored).map_err(|source| super::ConfigError::Encode {
            key: COUNTERS_KEY,
            source,
        })?;
        self.store.set_config(COUNTERS_KEY, &text)?;
        Ok(())
    }

    fn run_counters(&self) -> Result<RunCounters, MemoryError> {
        Ok(match self.store.config(COUNTERS_KEY)? {
            Some(text) => {
                serde_json::from_str(&text).map_err(|source| super::ConfigError::Unreadable {
                    key: COUNTERS_KEY,
                    source,
                })?
            }
            None => RunCounters::default(),
        })
    }

    /// Model calls of this data directory: calls made and tokens from the
    /// `ModelCall` records (less those copied from other processes), the
    /// rest from the counters runs saved.
    pub fn model_calls(&self) -> Result<ModelCallTotals, MemoryError> {
        let log = model_call_totals(&self.store)?;
        let runs = self.run_counters()?;
        Ok(ModelCallTotals {
            made: log.made.saturating_sub(runs.served_from_shared),
            served_from_log: runs.served_from_log,
            served_from_shared: runs.served_from_shared,
            failed: runs.failed,
            retries: runs.retries,
            prompt_tokens: log.prompt_tokens,
            completion_tokens: log.completion_tokens,
        })
    }
}
