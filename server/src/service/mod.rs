//! The operations the HTTP routes and the MCP tools share, over one data
//! directory: the streaming ingester that owns its writes, and the reads.
//!
//! Every operation takes the [`Caller`] and resolves the tenant through it
//! first, so no path reaches a record of a tenant the key does not allow.
//! Reads run on the blocking pool (the memory is synchronous) and answer
//! with the log sequence they reflect; a `min_seq` waits (bounded) until
//! the log holds it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde::Serialize;
use strataflow::Memory;
use strataflow::pipeline::stream::Ingester;

use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::metrics::Gauge;

pub mod error;
pub mod keyed;
pub mod node;
pub mod params;
mod protocol;
mod read;
mod searchers;
mod write;

pub use write::{Remembered, StoredMessage};

/// Settings of a [`Service`].
#[derive(Clone, Debug)]
pub struct ServiceOptions {
    /// Messages the ingest queue holds.
    pub queue: usize,
    /// How long an append may wait for the queue and for durability.
    pub append_timeout: Duration,
    /// How long a read may wait for `min_seq`.
    pub min_seq_wait: Duration,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        let serve = crate::options::ServeOptions::default();
        Self {
            queue: serve.queue,
            append_timeout: serve.append_timeout,
            min_seq_wait: serve.min_seq_wait,
        }
    }
}

/// An answer: its JSON body and the log sequence it reflects.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The log sequence the answer reflects (every record up to it).
    pub seq: u64,
    /// The body, in the shape of the CLI's `--json`.
    pub body: serde_json::Value,
}

/// One data directory being served.
pub struct Service {
    memory: Arc<Memory>,
    ingester: Ingester,
    options: ServiceOptions,
    /// Searchers kept in memory, caught up by sequence.
    searchers: Arc<searchers::Searchers>,
    /// Keyed memories: the embedder and the write lock.
    keyed: Arc<keyed::Keyed>,
    /// Set when this server is a node of a cluster (`serve --nats`).
    node: Option<node::ClusterNode>,
}

impl Service {
    /// Serves `memory`, starting its streaming ingester.
    pub fn start(memory: Memory, options: ServiceOptions) -> Result<Self, strataflow::MemoryError> {
        let ingester = memory.ingester(options.queue)?;
        Ok(Self {
            memory: Arc::new(memory),
            ingester,
            options,
            searchers: Arc::default(),
            keyed: Arc::default(),
            node: None,
        })
    }

    /// Makes this server a node of a cluster: its messages are published
    /// to the shared stream, and it answers the tenants of its partitions
    /// only.
    #[must_use]
    pub fn in_cluster(mut self, node: node::ClusterNode) -> Self {
        self.node = Some(node);
        self
    }

    /// The data directory served (a clustered node's consumer writes to it).
    pub fn memory(&self) -> Arc<Memory> {
        Arc::clone(&self.memory)
    }

    /// The last sequence of the log.
    pub fn last_seq(&self) -> Result<u64, ApiError> {
        last_seq(&self.memory)
    }

    /// Gauges of `/metrics`.
    pub fn gauges(&self) -> Result<Vec<Gauge>, ApiError> {
        let stats = self.memory.stats().map_err(error::from_memory)?;
        let status = self.memory.status(None).map_err(error::from_memory)?;
        let backlog: u64 = status.operators.iter().map(|o| o.pending).sum();
        Ok(vec![
            Gauge {
                name: "ingest_queue_depth",
                help: "Messages waiting in the ingest queue.",
                value: self.ingester.queued() as u64,
            },
            Gauge {
                name: "messages_stored",
                help: "Messages in the log.",
                value: stats.messages,
            },
            Gauge {
                name: "log_last_seq",
                help: "Last sequence number of the log.",
                value: stats.last_seq,
            },
            Gauge {
                name: "derivation_backlog",
                help: "Blocks the default profile's operators have not derived yet.",
                value: backlog,
            },
            Gauge {
                name: "model_calls",
                help: "Model calls recorded in the log.",
                value: status.model_calls.made,
            },
        ])
    }

    /// Waits until every queued message is durable and derived.
    pub async fn drain(&self) -> Result<(), ApiError> {
        self.ingester
            .flush()
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(())
    }

    /// Runs `f` on the blocking pool once the log holds `min_seq`; the
    /// answer reflects at least the sequence read before `f` ran.
    async fn read<T, F>(&self, min_seq: Option<u64>, f: F) -> Result<Answer, ApiError>
    where
        T: Serialize,
        F: FnOnce(&Memory) -> Result<T, ApiError> + Send + 'static,
        T: Send + 'static,
    {
        self.reach(min_seq).await?;
        let memory = Arc::clone(&self.memory);
        tokio::task::spawn_blocking(move || {
            let seq = last_seq(&memory)?;
            let value = f(&memory)?;
            let body = serde_json::to_value(value)
                .map_err(|e| ApiError::internal(format!("encoding the answer: {e}")))?;
            Ok(Answer { seq, body })
        })
        .await
        .map_err(|e| ApiError::internal(format!("the request's task failed: {e}")))?
    }

    /// Waits (bounded by `min_seq_wait`) until the log holds `min_seq`.
    async fn reach(&self, min_seq: Option<u64>) -> Result<(), ApiError> {
        let Some(wanted) = min_seq else {
            return Ok(());
        };
        let deadline = Instant::now() + self.options.min_seq_wait;
        let mut pause = Duration::from_millis(1);
        loop {
            let seq = self.last_seq()?;
            if seq >= wanted {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "behind",
                    format!("the views reflect sequence {seq}, not yet min_seq {wanted}: retry"),
                )
                .at_field("min_seq")
                .with_seq(seq)
                .retry(1));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

fn last_seq(memory: &Memory) -> Result<u64, ApiError> {
    memory.last_seq().map_err(error::from_memory)
}

impl Service {
    /// The tenant of a request: the one it names (which the key must
    /// allow) or the key's own; on a clustered node, one of the tenants its
    /// partitions hold (421 for another, naming the partition).
    fn tenant_of(&self, caller: &Caller, named: Option<&str>) -> Result<String, ApiError> {
        let tenant = caller.tenant(named)?;
        if let Some(node) = &self.node {
            node.owns(&tenant)?;
        }
        Ok(tenant)
    }

    /// Refuses, on a clustered node, a write that only messages may make:
    /// `what` would be stored on this node alone, not in the shared stream,
    /// and be lost when the node is rebuilt from it.
    fn local_write(&self, what: &str) -> Result<(), ApiError> {
        match &self.node {
            None => Ok(()),
            Some(_) => Err(ApiError::new(
                StatusCode::CONFLICT,
                "not_in_stream",
                format!(
                    "{what} cannot be written on a clustered node: only messages go through the shared stream, and anything else would live on this node alone and be lost when it is rebuilt from the stream"
                ),
            )),
        }
    }
}
