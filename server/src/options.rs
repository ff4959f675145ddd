//! Settings of `strataflow serve`, and the rule on where it may listen.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Default address: loopback, port 7700.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7700";

/// Settings of a server.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address to listen on (port 0: any free port, printed at start).
    pub listen: SocketAddr,
    /// The key file (`None`: no keys, loopback only).
    pub keys: Option<PathBuf>,
    /// Largest request body, in bytes (413 above it).
    pub max_body_bytes: usize,
    /// Messages the ingest queue holds before appends wait.
    pub queue: usize,
    /// How long an append waits for room in the queue and for durability
    /// before it is answered 503 with `Retry-After`.
    pub append_timeout: Duration,
    /// How long a read with `min_seq` waits for the views to reach it
    /// before it is answered 503 with the sequence they reflect.
    pub min_seq_wait: Duration,
    /// How long any request may take before it is answered 503.
    pub request_timeout: Duration,
    /// Keyed-memory retention: purge every tenant's entries last written
    /// longer than `older_than` ago, every `every` (none: off; `older_than`
    /// has no default).
    pub retention: Option<Retention>,
}

/// Keyed-memory retention of a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Entries last written longer ago than this are purged.
    pub older_than: Duration,
    /// How often the purge runs (default 1 hour).
    pub every: Duration,
}

/// How often retention runs when no interval is given.
pub const DEFAULT_RETENTION_EVERY: Duration = Duration::from_secs(3_600);

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 7700)),
            keys: None,
            max_body_bytes: 16 * 1024 * 1024,
            queue: 4096,
            append_timeout: Duration::from_secs(30),
            min_seq_wait: Duration::from_secs(5),
            request_timeout: Duration::from_secs(60),
            retention: None,
        }
    }
}

/// Error of starting or running a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback address without keys: anyone on the network could
    /// read and write every tenant.
    #[error(
        "refusing to listen on {listen} without API keys: anyone who can reach it could read and write every tenant; make keys with `strataflow keys add --tenant T` (or listen on 127.0.0.1)"
    )]
    OpenOnNetwork {
        /// The address asked for.
        listen: SocketAddr,
    },
    /// The key file is missing or invalid.
    #[error(transparent)]
    Keys(#[from] crate::keys::KeyError),
    /// The address cannot be bound.
    #[error("cannot listen on {listen}: {source}")]
    Bind {
        /// The address.
        listen: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The data directory failed.
    #[error(transparent)]
    Memory(Box<strataflow::MemoryError>),
    /// The NATS connection, the shared stream or a node's consumer failed.
    #[error(transparent)]
    Cluster(Box<strataflow_cluster::ClusterError>),
    /// The runtime or the server loop failed.
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

impl From<strataflow::MemoryError> for ServeError {
    fn from(e: strataflow::MemoryError) -> Self {
        Self::Memory(Box::new(e))
    }
}

/// Binds the listening socket; the error names the address.
pub(crate) async fn bind(
    listen: SocketAddr,
) -> Result<(tokio::net::TcpListener, SocketAddr), ServeError> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| ServeError::Bind { listen, source })?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}

/// Refuses a non-loopback address when no key is required.
pub fn check_listen(listen: SocketAddr, keys_required: bool) -> Result<(), ServeError> {
    if keys_required || listen.ip().is_loopback() {
        Ok(())
    } else {
        Err(ServeError::OpenOnNetwork { listen })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_without_keys() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let lo6: SocketAddr = "[::1]:7700".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:7700".parse().unwrap();
        assert!(check_listen(lo, false).is_ok());
        assert!(check_listen(lo6, false).is_ok());
        let e = check_listen(any, false).unwrap_err();
        assert!(e.to_string().contains("without API keys"), "{e}");
        assert!(check_listen(any, true).is_ok());
    }
}
