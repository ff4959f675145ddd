//! The operations the HTTP routes and the MCP tools share, over one data
//! directory: the streaming ingester that owns its writes, and the reads.

use std::sync::Arc;

use strataflow::Memory;
use strataflow::pipeline::stream::Ingester;

use crate::http::error::ApiError;
use crate::metrics::Gauge;

/// One data directory being served.
pub struct Service {
    memory: Arc<Memory>,
    ingester: Ingester,
}

impl Service {
    /// Serves `memory`, starting its streaming ingester with a queue of
    /// `queue` messages.
    pub fn start(memory: Memory, queue: usize) -> Result<Self, strataflow::MemoryError> {
        let ingester = memory.ingester(queue)?;
        Ok(Self {
            memory: Arc::new(memory),
            ingester,
        })
    }

    /// The last sequence of the log.
    pub fn last_seq(&self) -> Result<u64, ApiError> {
        Ok(self.memory.stats().map_err(internal)?.last_seq)
    }

    /// What the directory holds.
    pub fn stats(&self) -> Result<strataflow::Stats, ApiError> {
        self.memory.stats().map_err(internal)
    }

    /// Gauges of `/metrics`.
    pub fn gauges(&self) -> Result<Vec<Gauge>, ApiError> {
        let stats = self.memory.stats().map_err(internal)?;
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
        ])
    }

    /// Waits until every queued message is durable and derived.
    pub async fn drain(&self) -> Result<(), ApiError> {
        self.ingester.flush().await.map_err(internal)?;
        Ok(())
    }
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(e.to_string())
}
