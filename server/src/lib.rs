//! # strataflow-server
//!
//! strataflow as a long-running service: one process owns a data directory
//! and serves an HTTP/JSON API and MCP tools over it while it ingests.
//! API keys ([`keys`]) bind each client to exactly one tenant, or to admin.

pub mod front;
pub mod http;
pub mod keys;
pub mod metrics;
pub mod options;

#[cfg(test)]
mod assumptions {
    fn send_sync<T: Send + Sync>() {}
    #[test]
    fn memory_is_shared_between_request_tasks() {
        send_sync::<strataflow::Memory>();
        send_sync::<strataflow::pipeline::stream::Ingester>();
    }
}
pub mod mcp;
pub mod run;
pub mod service;
