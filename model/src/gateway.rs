//! The recording gateway: serves a request from its recorded `ModelCall`
//! when the log has one, else from the shared calls of other processes
//! when it has them ([`SharedCalls`], copied into the log), else (unless
//! offline) asks the service, offers the call to the shared calls (the
//! first call offered for a request is kept), records the kept call
//! durably, and answers from the recorded response.

use std::sync::Arc;
use std::sync::mpsc;

use strataflow_log::record::{ModelCall, Record};
use strataflow_log::{Digest, Durability, RecordId, Store};
use strataflow_operators::model::{ModelError, ModelGateway, ModelReply, ModelRequest};
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

use super::client::{Completion, ModelClient};
use super::response::parse_completion;
use super::settings::ModelSettings;
use super::shared::SharedCalls;
use super::stats::{Counters, ModelCallStats};

/// Most threads of the gateway's own runtime (requests are I/O-bound).
const RUNTIME_THREADS: usize = 2;

/// A [`ModelGateway`] over the log and an OpenAI-compatible service.
///
/// `complete` is synchronous and may be called from any thread, including
/// from inside a tokio runtime: requests run on the gateway's own runtime
/// and the caller waits for the answer (inside a multi-thread runtime
/// through `block_in_place`).
pub struct RecordingGateway {
    store: Arc<Store>,
    online: Option<Online>,
    shared: Option<Arc<dyn SharedCalls>>,
    counters: Counters,
}

/// The client and the runtime it runs on (absent offline); shared by the
/// chat gateway and the embeddings operator.
pub(crate) struct Online {
    pub(crate) client: Arc<ModelClient>,
    runtime: Option<Runtime>,
}

impl Drop for Online {
    fn drop(&mut self) {
        // A runtime cannot be dropped from inside another one; shutting it
        // down in the background works from anywhere.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for RecordingGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingGateway")
            .field("store", &self.store)
            .field("client", &self.online.as_ref().map(|o| &o.client))
            .field("shared", &self.shared.as_ref().map(|s| s.name()))
            .finish_non_exhaustive()
    }
}

impl RecordingGateway {
    /// A gateway over `store`. Offline, it answers only recorded requests
    /// and needs no client (the API key is not read). Online, the client is
    /// built now: a bad base URL or a missing API key variable is
    /// [`ModelError::Config`].
    pub fn new(
        store: Arc<Store>,
        settings: ModelSettings,
        offline: bool,
    ) -> Result<Self, ModelError> {
        let online = if offline {
            None
        } else {
            Some(Online::start(&settings)?)
        };
        Ok(Self {
            store,
            online,
            shared: None,
            counters: Counters::default(),
        })
    }

    /// Looks requests up in `shared` after the log (offline too: a lookup
    /// is no model call) and offers it every call made; the call it keeps
    /// is the one recorded and answered from.
    pub fn with_shared_calls(mut self, shared: Arc<dyn SharedCalls>) -> Self {
        self.shared = Some(shared);
        self
    }

    /// Whether it answers only from the log.
    pub fn is_offline(&self) -> bool {
        self.online.is_none()
    }

    /// Calls made, served from the log and failed since it was built.
    pub fn stats(&self) -> ModelCallStats {
        self.counters.snapshot()
    }

    /// The recorded call for a request key, if any (the first recorded).
    pub fn recorded(&self, key: &Digest) -> Result<Option<(RecordId, ModelCall)>, ModelError> {
        self.store
            .model_call(key)
            .map_err(|e| ModelError::local(format!("reading recorded model call {key}: {e}")))
    }

    fn answer(&self, request: &ModelRequest, subject: &str) -> Result<ModelReply, ModelError> {
        let key = request.key();
        if let Some((id, call)) = self.recorded(&key)? {
            let reply = reply_from(&id, &call, subject, true)?;
            self.counters.served_from_log();
            return Ok(reply);
        }
        if let Some(shared) = &self.shared {
            let found = shared
                .find(&key)
                .map_err(|e| shared_error(shared.as_ref(), "looking up", &key, subject, &e))?;
            if let Some(call) = found {
                let (id, stored) = self.record(call, &key, request, subject)?;
                let reply = reply_from(&id, &stored, subject, true)?;
                self.counters.served_from_shared();
                return Ok(reply);
            }
        }
        let Some(online) = &self.online else {
            return Err(ModelError::Offline {
                operator: request.operator.to_string(),
                subject: subject.to_owned(),
            });
        };
        let completion = online.run(request)?;
        let call = ModelCall {
            request_hash: key,
            operator: request.operator.to_string(),
            model: request.model.clone(),
            request: request.canonical(),
            response: completion.body,
            usage: completion.usage,
        };
        // Shared first: the call kept there (the first offered for this
        // request, maybe another process's) is the one recorded here, so
        // every process answers from the same response. Nothing is
        // recorded unless it was kept or read back.
        let call = match &self.shared {
            Some(shared) => shared
                .offer(call)
                .map_err(|e| shared_error(shared.as_ref(), "offering", &key, subject, &e))?,
            None => call,
        };
        let (id, stored) = self.record(call, &key, request, subject)?;
        self.counters.made(completion.usage, completion.attempts);
        reply_from(&id, &stored, subject, false)
    }

    /// Records a call durably (before its answer is used: a crash from here
    /// on never pays for this request again) and returns what the log then
    /// holds for the request (the first recorded call wins, so a fresh
    /// reply and a replayed one are the same).
    fn record(
        &self,
        call: ModelCall,
        key: &Digest,
        request: &ModelRequest,
        subject: &str,
    ) -> Result<(RecordId, ModelCall), ModelError> {
        if call.request_hash != *key {
            return Err(ModelError::local(format!(
                "the model call given for request {key} of {} on {subject} is keyed {}",
                request.operator, call.request_hash
            )));
        }
        self.store
            .append(&[Record::ModelCall(call)], Durability::Sync)
            .map_err(|e| {
                ModelError::local(format!(
                    "recording the model call for {} on {subject}: {e}",
                    request.operator
                ))
            })?;
        self.recorded(key)?.ok_or_else(|| {
            ModelError::local(format!(
                "model call {key} for {} on {subject} was appended but is not indexed",
                request.operator
            ))
        })
    }
}

/// A failure of the shared calls: a halt (nothing of the run recorded).
fn shared_error(
    shared: &dyn SharedCalls,
    doing: &str,
    key: &Digest,
    subject: &str,
    e: &super::shared::SharedCallsError,
) -> ModelError {
    ModelError::SharedCalls {
        log: shared.name(),
        detail: format!("{doing} the call for request {key} on {subject}: {e}"),
    }
}

impl Online {
    /// Builds the client (a bad base URL or a missing API key variable is
    /// [`ModelError::Config`]) and its runtime.
    pub(crate) fn start(settings: &ModelSettings) -> Result<Self, ModelError> {
        let client = Arc::new(ModelClient::new(settings)?);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(settings.concurrency.clamp(1, RUNTIME_THREADS))
            .thread_name("strataflow-model")
            .enable_all()
            .build()
            .map_err(|e| ModelError::Config {
                setting: ModelError::SETTING_RUNTIME,
                problem: format!("cannot start the model runtime: {e}"),
            })?;
        Ok(Self {
            client,
            runtime: Some(runtime),
        })
    }

    /// Runs the client on the gateway's runtime and waits for it.
    fn run(&self, request: &ModelRequest) -> Result<Completion, ModelError> {
        let request = request.clone();
        self.wait_all(vec![move |client: Arc<ModelClient>| async move {
            client.complete(&request).await
        }])
        .pop()
        .unwrap_or_else(|| Err(ModelError::local("the model request gave no answer")))
    }

    /// Runs every job on the runtime at once (the client's semaphore limits
    /// how many requests are in flight) and waits for all of them; answers
    /// in the jobs' order. Works from any thread, inside a multi-thread
    /// runtime through `block_in_place`.
    pub(crate) fn wait_all<J, F>(&self, jobs: Vec<J>) -> Vec<Result<Completion, ModelError>>
    where
        J: FnOnce(Arc<ModelClient>) -> F,
        F: std::future::Future<Output = Result<Completion, ModelError>> + Send + 'static,
    {
        let Some(runtime) = &self.runtime else {
            return jobs
                .iter()
                .map(|_| Err(ModelError::local("the model runtime is shut down")))
                .collect();
        };
        let receivers: Vec<_> = jobs
            .into_iter()
            .map(|job| {
                let (tx, rx) = mpsc::sync_channel(1);
                let future = job(Arc::clone(&self.client));
                runtime.spawn(async move {
                    // The receiver is gone only when the caller gave up.
                    let _ = tx.send(future.await);
                });
                rx
            })
            .collect();
        let wait = move || {
            receivers
                .into_iter()
                .map(|rx| {
                    rx.recv().unwrap_or_else(|_| {
                        Err(ModelError::local(
                            "the model request was dropped before it answered",
                        ))
                    })
                })
                .collect()
        };
        match Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        }
    }
}

/// The reply in a recorded call; an unusable response is
/// [`ModelError::Malformed`] naming the call (which stays recorded).
fn reply_from(
    id: &RecordId,
    call: &ModelCall,
    subject: &str,
    from_log: bool,
) -> Result<ModelReply, ModelError> {
    let answer = parse_completion(&call.response).map_err(|e| ModelError::Malformed {
        call: Some(*id),
        problem: format!("{} on {subject} (model call {id}): {e}", call.operator),
    })?;
    Ok(ModelReply {
        arguments: answer.arguments,
        from_log,
    })
}

impl ModelGateway for RecordingGateway {
    fn complete(&self, request: &ModelRequest, subject: &str) -> Result<ModelReply, ModelError> {
        let result = self.answer(request, subject);
        if result.is_err() {
            self.counters.failed();
        }
        result
    }
}
