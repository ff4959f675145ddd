//! Running a server: the runtime, the listener, and a clean stop on
//! SIGTERM or SIGINT (stop accepting, drain the ingest queue, flush, exit).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use strataflow_cluster::Connection;
use strataflow_cluster::node::NodeOptions;

use strataflow::Memory;

use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};

use crate::http::auth::{Caller, Keys};
use crate::http::{self, AppState};
use crate::keys::Scope;
use crate::mcp::MemoryTools;
use crate::metrics::Metrics;
use crate::options::{ServeError, ServeOptions, check_listen};
use crate::service::node::ClusterNode;
use crate::service::{Service, ServiceOptions};

/// Checks what can be checked before the data directory is opened: the
/// key file reads, and the address is loopback unless keys are required.
pub fn check(options: &ServeOptions) -> Result<(), ServeError> {
    checked_keys(options).map(drop)
}

/// The keys of `options` (open without a key file), refused with the
/// listening address when that is off loopback and no key is required.
pub(crate) fn checked_keys(options: &ServeOptions) -> Result<Keys, ServeError> {
    let keys = match &options.keys {
        Some(path) => Keys::from_file(path.clone())?,
        None => Keys::open(),
    };
    check_listen(options.listen, keys.required())?;
    Ok(keys)
}

/// Serves `memory` until SIGTERM or SIGINT; `announce` is called with the
/// bound address once requests are accepted.
pub fn run(
    memory: Memory,
    options: &ServeOptions,
    announce: impl FnOnce(SocketAddr, &Keys),
) -> Result<(), ServeError> {
    serve(memory, options, None, announce)
}

/// A cluster node's server (`serve --nats`): [`run`] whose messages go to
/// the shared stream, answering the tenants of `node`'s partitions, while
/// a consumer stores those partitions into `memory` (model calls through
/// the model-call stream); on SIGTERM or SIGINT it stops accepting, lets
/// the consumer finish its batch, and drains.
pub fn run_node(
    mut memory: Memory,
    options: &ServeOptions,
    node: ClusterNode,
    consumer: &NodeOptions,
    announce: impl FnOnce(SocketAddr, &Keys),
) -> Result<(), ServeError> {
    let consuming =
        Connection::connect(node.publisher.connection().url()).map_err(cluster_error)?;
    strataflow_cluster::node::share_calls(&consuming, &mut memory, &consumer.prefix)
        .map_err(cluster_error)?;
    // Its log holds what the consumer stores, nothing else: searches and
    // expansions record no batch.
    memory.set_replica(true);
    // Kept here so that the connection's runtime is dropped outside the
    // server's.
    let publishing = Arc::clone(&node.publisher);
    let result = serve(memory, options, Some((node, consuming, consumer)), announce);
    drop(publishing);
    result
}

fn cluster_error(e: strataflow_cluster::ClusterError) -> ServeError {
    match e {
        strataflow_cluster::ClusterError::Memory(e) => ServeError::Memory(Box::new(e)),
        e => ServeError::Cluster(Box::new(e)),
    }
}

/// The consumer of a node's partitions, beside its server.
struct Consumer {
    stop: Arc<AtomicBool>,
    /// Notified when the consumer stopped on an error: the server then
    /// stops too (exit 1, as `node` does), rather than serving a replica
    /// that no longer follows the stream.
    failed: Arc<tokio::sync::Notify>,
    thread: std::thread::JoinHandle<Result<(), ServeError>>,
}

impl Consumer {
    fn start(
        connection: Connection,
        memory: Arc<Memory>,
        options: NodeOptions,
    ) -> Result<Self, ServeError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let failed = Arc::new(tokio::sync::Notify::new());
        let failing = Arc::clone(&failed);
        let thread = std::thread::Builder::new()
            .name("strataflow-node".into())
            .spawn(move || {
                let report = strataflow_cluster::node::consume_until(
                    &connection,
                    &memory,
                    &options,
                    &flag,
                    &mut |r| {
                        tracing::debug!(delivered = r.delivered, stored = r.stored, "consumed")
                    },
                );
                match report {
                    Ok(r) => {
                        tracing::info!(
                            delivered = r.delivered,
                            stored = r.stored,
                            "consumer stopped"
                        );
                        Ok(())
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "the consumer stopped; the server stops");
                        failing.notify_one();
                        Err(cluster_error(e))
                    }
                }
            })?;
        Ok(Self {
            stop,
            failed,
            thread,
        })
    }

    /// Stops after the batch in hand; the consumer's error, if it failed.
    fn stop(self) -> Result<(), ServeError> {
        self.stop.store(true, Ordering::Release);
        self.thread
            .join()
            .map_err(|_| ServeError::Io(std::io::Error::other("the consumer thread panicked")))?
    }
}

fn serve(
    memory: Memory,
    options: &ServeOptions,
    node: Option<(ClusterNode, Connection, &NodeOptions)>,
    announce: impl FnOnce(SocketAddr, &Keys),
) -> Result<(), ServeError> {
    let keys = checked_keys(options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strataflow-serve")
        .build()?;
    let mut consumer = None;
    let consumer_failed = Arc::new(tokio::sync::Notify::new());
    let served = runtime.block_on(async {
        let mut service = Service::start(
            memory,
            ServiceOptions {
                queue: options.queue,
                append_timeout: options.append_timeout,
                min_seq_wait: options.min_seq_wait,
            },
        )?;
        if let Some((node, connection, consumer_options)) = node {
            service = service.in_cluster(node);
            let started = Consumer::start(connection, service.memory(), consumer_options.clone())?;
            let failed = Arc::clone(&started.failed);
            let forward = Arc::clone(&consumer_failed);
            tokio::spawn(async move {
                failed.notified().await;
                forward.notify_one();
            });
            consumer = Some(started);
        }
        let service = Arc::new(service);
        let (listener, bound) = crate::options::bind(options.listen).await?;
        let state = AppState {
            service: Arc::clone(&service),
            metrics: Arc::new(Metrics::default()),
            keys: Arc::new(keys),
        };
        announce(bound, &state.keys);
        if let Some(retention) = options.retention {
            let service = Arc::clone(&service);
            tokio::spawn(async move {
                let mut timer = tokio::time::interval(retention.every);
                loop {
                    timer.tick().await;
                    match service.retention(retention.older_than).await {
                        Ok(purged) => {
                            tracing::info!(purged, "keyed-memory retention ran");
                        }
                        Err(e) => {
                            tracing::warn!(error = %e.message, "keyed-memory retention failed")
                        }
                    }
                }
            });
        }
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default();
        config.max_request_body_bytes = options.max_body_bytes;
        config.cancellation_token = cancel.child_token();
        if !options.listen.ip().is_loopback() {
            // Keys guard a server on the network (check_listen); the Host
            // check guards loopback servers against DNS rebinding only.
            config = config.disable_allowed_hosts();
        }
        let tools_service = Arc::clone(&service);
        let local = Caller {
            scope: Scope::Admin,
            key_id: None,
        };
        let mcp = StreamableHttpService::new(
            move || Ok(MemoryTools::new(Arc::clone(&tools_service), local.clone())),
            LocalSessionManager::default().into(),
            config,
        );
        let mcp = axum::Router::new().nest_service("/mcp", mcp);
        let app = http::router(
            state,
            options.max_body_bytes,
            options.request_timeout,
            Some(mcp),
        );
        let consumer_failed = Arc::clone(&consumer_failed);
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                tokio::select! {
                    () = stop_signal() => {}
                    () = consumer_failed.notified() => {}
                }
                cancel.cancel();
            })
            .await?;
        tracing::info!("stopped accepting; draining the ingest queue");
        service
            .drain()
            .await
            .map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))?;
        Ok::<(), ServeError>(())
    });
    // The consumer's connection has its own runtime: stopped (and dropped)
    // out of the server's.
    let consumed = consumer.map_or(Ok(()), Consumer::stop);
    served.and(consumed)
}

/// Serves the MCP tools on stdin and stdout until the client closes them
/// (or SIGTERM/SIGINT), acting as `caller`; then drains the ingest queue.
pub fn run_stdio(memory: Memory, queue: usize, caller: Caller) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strataflow-mcp")
        .build()?;
    runtime.block_on(async move {
        let service = Arc::new(Service::start(
            memory,
            ServiceOptions {
                queue,
                ..ServiceOptions::default()
            },
        )?);
        let tools = MemoryTools::new(Arc::clone(&service), caller);
        let running = tools
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))?;
        tokio::select! {
            quit = running.waiting() => {
                quit.map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))?;
            }
            () = stop_signal() => {}
        }
        service
            .drain()
            .await
            .map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))?;
        Ok(())
    })
}

/// Resolves on the first SIGTERM or SIGINT.
pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM"),
                    _ = int.recv() => tracing::info!("SIGINT"),
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
