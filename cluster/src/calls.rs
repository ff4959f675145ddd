//! The model-call stream: the model calls of every node, shared.
//!
//! A stream `<prefix>_calls` (R3 on a cluster, file storage, no age limit,
//! one message kept per subject) holds one `ModelCall` record per request
//! hash, at `<prefix>.calls.<request hash>`, encoded as the log stores it.
//! [`CallStream`] is the model gateway's [`SharedCalls`]: a node asks its
//! own log first, then this stream (a direct get of the subject's last
//! message: any replica answers), then the model. A call found here is
//! copied into the node's log (the same record: ids are content hashes)
//! and costs no model request, so a node rebuilding its tenants from the
//! streams asks the model nothing.
//!
//! A call just made is published with `Nats-Msg-Id` = its request hash
//! and `Nats-Expected-Last-Subject-Sequence: 0`: the stream stores it only
//! if the subject holds nothing yet, so the first writer of a request wins.
//! A loser (two nodes asked at once, or a repeat inside the de-duplication
//! window) reads the winner's message back from the stream leader and
//! answers from that, never from its own reply, so every node derives from
//! the same response even from a nondeterministic model. The gateway
//! records the call locally only once this returns.
//!
//! Every request is bounded like the raw-message publisher's
//! (`ATTEMPT_TIMEOUT` per attempt) and retried with the same backoff
//! until the retry limit has passed since the first failure; then the
//! error stops the node's run (nothing of the halted run is recorded).

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::{
    self,
    context::PublishErrorKind,
    message::{PublishMessage, StreamMessage},
    stream::{DirectGetErrorKind, RawMessageErrorKind},
};
use strataflow::model::{SharedCalls, SharedCallsError};
use strataflow_log::Digest;
use strataflow_log::envelope::{decode, encode_with_id};
use strataflow_log::record::{ModelCall, Record};
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

use crate::publish::transient;
use crate::retry::{Attempt, retried};
use crate::{ClusterError, DUPLICATE_WINDOW, STREAM_REQUEST_TIMEOUT, Subjects, connect_client};

/// The model-call stream of a prefix, with its own client on its own
/// runtime (one worker thread), so that it answers from any thread, the
/// model gateway's workers included, whatever the caller's runtime.
pub struct CallStream {
    /// Taken on drop (shut down in the background: dropping a runtime from
    /// inside another one is refused).
    runtime: Option<Runtime>,
    context: jetstream::Context,
    stream: jetstream::stream::Stream,
    subjects: Subjects,
    retry_for: Duration,
}

impl CallStream {
    /// Connects to `url` (comma-separated for a cluster) and opens the
    /// model-call stream of `subjects`, creating it if needed with
    /// `replicas` replicas (default: 3 on a cluster, 1 on a single server).
    /// A failed request is retried for `retry_for` after its first failure.
    pub fn open(
        url: &str,
        subjects: &Subjects,
        replicas: Option<usize>,
        retry_for: Duration,
    ) -> Result<Self, ClusterError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("strataflow-calls")
            .enable_all()
            .build()
            .map_err(ClusterError::Runtime)?;
        let (client, context) = connect_client(&runtime, url)?;
        let replicas = replicas.unwrap_or(if client.server_info().cluster.is_some() {
            3
        } else {
            1
        });
        let name = subjects.calls_stream();
        let config = jetstream::stream::Config {
            name: name.clone(),
            subjects: vec![subjects.all_calls()],
            num_replicas: replicas.max(1),
            max_messages_per_subject: 1,
            duplicate_window: DUPLICATE_WINDOW,
            allow_direct: true,
            storage: jetstream::stream::StorageType::File,
            ..Default::default()
        };
        // Every node opens it as it starts, so several may create it at
        // once (the server answers each the same stream): a request that
        // times out meanwhile is sent again.
        let stream = runtime.block_on(retried(
            STREAM_REQUEST_TIMEOUT,
            format!("open or create stream {name}"),
            || {
                let (context, config) = (context.clone(), config.clone());
                async move {
                    match context.get_or_create_stream(config).await {
                        Ok(stream) => Attempt::Done(stream),
                        Err(e) => Attempt::Again(e.to_string()),
                    }
                }
            },
        ))?;
        Ok(Self {
            runtime: Some(runtime),
            context,
            stream,
            subjects: subjects.clone(),
            retry_for,
        })
    }

    /// The stream's name.
    pub fn stream_name(&self) -> String {
        self.subjects.calls_stream()
    }

    /// The call the stream holds for a request hash, if any (a direct get:
    /// any replica answers, so one just published elsewhere may not show
    /// yet; publishing then finds it).
    pub fn find(&self, key: &Digest) -> Result<Option<ModelCall>, ClusterError> {
        let (stream, subject, name, key) = (
            self.stream.clone(),
            self.subjects.call(key),
            self.stream_name(),
            *key,
        );
        let what = format!("direct get of {subject} from stream {name}");
        self.wait(retried(self.retry_for, what, move || {
            let (stream, subject, name) = (stream.clone(), subject.clone(), name.clone());
            async move {
                match stream.direct_get_last_for_subject(subject).await {
                    Ok(m) => match call_of(&name, &key, &m) {
                        Ok(call) => Attempt::Done(Some(call)),
                        Err(e) => Attempt::Fatal(e),
                    },
                    Err(e) if e.kind() == DirectGetErrorKind::NotFound => Attempt::Done(None),
                    Err(e) => Attempt::Again(e.to_string()),
                }
            }
        }))
    }

    /// Publishes a call unless the stream holds one for its request hash
    /// already; returns the call the stream holds (`call` itself when it
    /// was the first, else the first writer's, read back).
    pub fn offer(&self, call: ModelCall) -> Result<ModelCall, ClusterError> {
        let key = call.request_hash;
        let (_, payload) = encode_with_id(&Record::ModelCall(call.clone()))
            .map_err(|e| ClusterError::js("encode a model call", e))?;
        let (context, subject, id) = (self.context.clone(), self.subjects.call(&key), key.to_hex());
        let what = format!(
            "publish of the model call to {subject} in stream {}",
            self.stream_name()
        );
        let stored_ours = self.wait(retried(self.retry_for, what, move || {
            let (context, subject, id, payload) = (
                context.clone(),
                subject.clone(),
                id.clone(),
                payload.clone(),
            );
            async move {
                let message = PublishMessage::build()
                    .payload(payload.into())
                    .message_id(id)
                    // Stored only if the subject holds nothing: the first
                    // writer of a request hash wins.
                    .expected_last_subject_sequence(0);
                let ack = match context.send_publish(subject, message).await {
                    Ok(ack) => ack.await,
                    Err(e) => Err(e),
                };
                match ack {
                    Ok(ack) => Attempt::Done(!ack.duplicate),
                    // Another writer's call is there already.
                    Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                        Attempt::Done(false)
                    }
                    Err(e) if !transient(&e) => {
                        Attempt::Fatal(ClusterError::js("publish of a model call", e))
                    }
                    Err(e) => Attempt::Again(e.to_string()),
                }
            }
        }))?;
        if stored_ours {
            return Ok(call);
        }
        // A duplicate (the same request hash inside the de-duplication
        // window: this run's earlier attempt, or another writer's) or a
        // subject already written: what the stream holds is the answer.
        self.read_back(&key)
    }

    /// The call the stream's leader holds for a request hash (it must hold
    /// one: its publish was refused for it).
    fn read_back(&self, key: &Digest) -> Result<ModelCall, ClusterError> {
        let (stream, subject, name, key) = (
            self.stream.clone(),
            self.subjects.call(key),
            self.stream_name(),
            *key,
        );
        let what = format!("read of the model call kept at {subject} in stream {name}");
        self.wait(retried(self.retry_for, what, move || {
            let (stream, subject, name) = (stream.clone(), subject.clone(), name.clone());
            async move {
                match stream
                    .raw_message_builder()
                    .last_by_subject(subject)
                    .send()
                    .await
                {
                    Ok(m) => match call_of(&name, &key, &m) {
                        Ok(call) => Attempt::Done(call),
                        Err(e) => Attempt::Fatal(e),
                    },
                    Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => Attempt::Again(
                        "the stream refused the call as written already but holds none".to_owned(),
                    ),
                    Err(e) => Attempt::Again(e.to_string()),
                }
            }
        }))
    }

    /// Runs `job` on the stream's runtime and waits for it, from any thread
    /// (inside a multi-thread runtime through `block_in_place`).
    fn wait<T: Send + 'static>(
        &self,
        job: impl Future<Output = Result<T, ClusterError>> + Send + 'static,
    ) -> Result<T, ClusterError> {
        let stopped = || {
            ClusterError::js(
                format!("request to stream {}", self.stream_name()),
                "the NATS client runtime stopped before it answered",
            )
        };
        let Some(runtime) = &self.runtime else {
            return Err(stopped());
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            // The receiver is gone only when the caller gave up.
            let _ = tx.send(job.await);
        });
        let receive = move || rx.recv();
        let got = match Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(receive)
            }
            _ => receive(),
        };
        got.unwrap_or_else(|_| Err(stopped()))
    }
}

impl Drop for CallStream {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl SharedCalls for CallStream {
    fn name(&self) -> String {
        format!("stream {}", self.stream_name())
    }

    fn find(&self, key: &Digest) -> Result<Option<ModelCall>, SharedCallsError> {
        CallStream::find(self, key).map_err(Into::into)
    }

    fn offer(&self, call: ModelCall) -> Result<ModelCall, SharedCallsError> {
        CallStream::offer(self, call).map_err(Into::into)
    }
}

/// The `ModelCall` of a stream message, checked against the request hash
/// its subject names.
fn call_of(stream: &str, key: &Digest, message: &StreamMessage) -> Result<ModelCall, ClusterError> {
    let bad = |detail: String| ClusterError::BadMessage {
        stream: stream.to_owned(),
        sequence: message.sequence,
        subject: message.subject.to_string(),
        detail,
    };
    match decode(&message.payload) {
        Ok(Record::ModelCall(call)) if call.request_hash == *key => Ok(call),
        Ok(Record::ModelCall(call)) => Err(bad(format!(
            "a model call for request {}, not {key}",
            call.request_hash
        ))),
        Ok(other) => Err(bad(format!(
            "a {} record, not a model call",
            other.kind().name()
        ))),
        Err(e) => Err(bad(e.to_string())),
    }
}
