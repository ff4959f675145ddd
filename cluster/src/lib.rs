//! # strataflow-cluster
//!
//! Scale-out on NATS JetStream. Raw messages are published to one shared
//! stream ([`publish`]), one subject per thread
//! (`<prefix>.l5.<partition>.<tenant>.<thread>`, [`subject`]), with
//! `Nats-Msg-Id` = the Message record's id; each `strataflow node`
//! ([`node`]) owns some partitions, consumes them with durable pull
//! consumers and runs the usual pipeline (the streaming ingester: seal,
//! derive, views) into its own data directory, acknowledging a message
//! only once the batch holding it is durable there. Both sides sit behind
//! the pipeline's log seam (`strataflow_pipeline::log_seam`).
//!
//! The tenant is the unit of placement: a partition is a hash of the
//! tenant, so every view of a tenant is complete on the one node owning it.
//!
//! Model calls are shared through a second stream ([`calls`]), one
//! subject per request hash, where the first call published for a request
//! is kept: a node's model gateway looks a request up there after its own
//! log and before the model, so each request is paid for once in the
//! cluster and a node rebuilding a tenant makes no model request.

pub mod calls;
pub mod node;
pub mod publish;
pub mod publisher;
mod retry;
pub mod subject;

use std::time::Duration;

use async_nats::jetstream;

pub use subject::{Subjects, escape_token, partition_of};

/// Partitions of a stream created without `--partitions`.
pub const DEFAULT_PARTITIONS: u32 = 16;

/// The de-duplication window of the raw-message stream: a message id seen
/// within it is dropped by JetStream itself; older repeats are dropped by
/// the publisher, which reads a thread's stored messages back, and by the
/// nodes, by content id.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(600);

/// The longest wait for the stream to be opened or created, or for its
/// info.
pub const STREAM_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Error of the cluster layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The stream prefix is not one subject token.
    #[error(
        "stream prefix `{prefix}`: use ASCII letters, digits, `-` and `_` only (it is one subject token)"
    )]
    Prefix {
        /// The prefix given.
        prefix: String,
    },
    /// The NATS server could not be reached.
    #[error("cannot connect to NATS at {url}: {detail}")]
    Connect {
        /// The URL given.
        url: String,
        /// The client's reason.
        detail: String,
    },
    /// A JetStream request failed (stream, consumer, publish, fetch, ack).
    #[error("JetStream {operation} failed: {detail}")]
    JetStream {
        /// What was asked (`create stream strataflow_l5`, `publish`, …).
        operation: String,
        /// The client's or the server's reason.
        detail: String,
    },
    /// The stream exists without a valid partition count in its metadata.
    #[error(
        "stream {stream} has no valid `{key}` metadata (found {found:?}): it was not created by strataflow"
    )]
    Partitions {
        /// The stream.
        stream: String,
        /// The metadata key.
        key: &'static str,
        /// What it holds.
        found: Option<String>,
    },
    /// A partition named by the node is outside the stream's partitions.
    #[error(
        "partition {partition} does not exist: stream {stream} has {partitions} (0..{partitions})"
    )]
    NoSuchPartition {
        /// The partition asked for.
        partition: u32,
        /// The stream.
        stream: String,
        /// Its partition count.
        partitions: u32,
    },
    /// A message of the stream is not a Message record.
    #[error("stream {stream} sequence {sequence} ({subject}): {detail}")]
    BadMessage {
        /// The stream.
        stream: String,
        /// Its stream sequence.
        sequence: u64,
        /// Its subject.
        subject: String,
        /// What is wrong.
        detail: String,
    },
    /// The node's store refused or failed.
    #[error(transparent)]
    Memory(#[from] strataflow::MemoryError),
    /// The node's streaming ingester refused a batch.
    #[error("storing the batch from stream {stream} (sequences {first}..={last}) failed: {source}")]
    Store {
        /// The stream.
        stream: String,
        /// The first stream sequence of the batch.
        first: u64,
        /// The last.
        last: u64,
        /// The ingester's error.
        #[source]
        source: Box<strataflow_pipeline::stream::StreamError>,
    },
    /// The local tokio runtime could not start.
    #[error("cannot start the NATS client runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

impl ClusterError {
    fn js(operation: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        Self::JetStream {
            operation: operation.into(),
            detail: detail.to_string(),
        }
    }
}

/// Connects a client on `runtime` (which then drives its connection) to
/// `url` (comma-separated for a cluster), with its JetStream context.
pub(crate) fn connect_client(
    runtime: &tokio::runtime::Runtime,
    url: &str,
) -> Result<(async_nats::Client, jetstream::Context), ClusterError> {
    let urls: Vec<String> = url.split(',').map(|u| u.trim().to_owned()).collect();
    let client = runtime
        .block_on(async {
            // Connecting retries in the background; the flush waits for the
            // first server's answer (and its INFO: whether it is
            // clustered), bounded.
            tokio::time::timeout(Duration::from_secs(20), async {
                let client = async_nats::ConnectOptions::new()
                    .retry_on_initial_connect()
                    .connect(urls)
                    .await?;
                client.flush().await?;
                Ok::<_, async_nats::Error>(client)
            })
            .await
        })
        .map_err(|_| ClusterError::Connect {
            url: url.to_owned(),
            detail: "no answer within 20 s".to_owned(),
        })?
        .map_err(|e| ClusterError::Connect {
            url: url.to_owned(),
            detail: e.to_string(),
        })?;
    // The context spawns its acknowledgement task on the runtime.
    let context = {
        let _inside = runtime.enter();
        jetstream::new(client.clone())
    };
    Ok((client, context))
}

/// A connection: the client, its JetStream context and the runtime that
/// drives them (the callers are plain threads).
pub struct Connection {
    runtime: tokio::runtime::Runtime,
    client: async_nats::Client,
    context: jetstream::Context,
    url: String,
}

impl Connection {
    /// Connects to a NATS server (a comma-separated list of URLs for a
    /// cluster).
    pub fn connect(url: &str) -> Result<Self, ClusterError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ClusterError::Runtime)?;
        let (client, context) = connect_client(&runtime, url)?;
        Ok(Self {
            runtime,
            client,
            context,
            url: url.to_owned(),
        })
    }

    /// Whether the server is part of a cluster (streams then get 3
    /// replicas by default).
    pub fn clustered(&self) -> bool {
        self.client.server_info().cluster.is_some()
    }

    /// The URL connected to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The raw-message stream and its partition count: opened if it
    /// exists (its partition count read from its metadata), else created
    /// with `create_partitions` partitions and `replicas` replicas.
    pub fn raw_stream(
        &self,
        subjects: &Subjects,
        create_partitions: u32,
        replicas: usize,
    ) -> Result<(jetstream::stream::Stream, u32), ClusterError> {
        let name = subjects.stream();
        let config = jetstream::stream::Config {
            name: name.clone(),
            subjects: vec![subjects.all()],
            num_replicas: replicas.max(1),
            duplicate_window: DUPLICATE_WINDOW,
            storage: jetstream::stream::StorageType::File,
            metadata: [(
                subject::PARTITIONS_KEY.to_owned(),
                create_partitions.max(1).to_string(),
            )]
            .into_iter()
            .collect(),
            ..Default::default()
        };
        // Each request bounded, whatever the client does meanwhile.
        let no_answer = || format!("no answer within {STREAM_REQUEST_TIMEOUT:?}");
        let mut stream = self
            .runtime
            .block_on(async {
                tokio::time::timeout(
                    STREAM_REQUEST_TIMEOUT,
                    self.context.get_or_create_stream(config),
                )
                .await
            })
            .map_err(|_| ClusterError::js(format!("open or create stream {name}"), no_answer()))?
            .map_err(|e| ClusterError::js(format!("open or create stream {name}"), e))?;
        let info = self
            .runtime
            .block_on(async { tokio::time::timeout(STREAM_REQUEST_TIMEOUT, stream.info()).await })
            .map_err(|_| ClusterError::js(format!("info of stream {name}"), no_answer()))?
            .map_err(|e| ClusterError::js(format!("info of stream {name}"), e))?;
        let found = info.config.metadata.get(subject::PARTITIONS_KEY).cloned();
        let partitions = found
            .as_deref()
            .and_then(|p| p.parse::<u32>().ok())
            .filter(|p| *p > 0)
            .ok_or(ClusterError::Partitions {
                stream: name,
                key: subject::PARTITIONS_KEY,
                found,
            })?;
        Ok((stream, partitions))
    }
}
