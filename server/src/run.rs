//! Running a server: the runtime, the listener, and a clean stop on
//! SIGTERM or SIGINT (stop accepting, drain the ingest queue, flush, exit).

use std::net::SocketAddr;
use std::sync::Arc;

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
use crate::service::{Service, ServiceOptions};

/// Checks what can be checked before the data directory is opened: the
/// key file reads, and the address is loopback unless keys are required.
pub fn check(options: &ServeOptions) -> Result<(), ServeError> {
    let keys = match &options.keys {
        Some(path) => Keys::from_file(path.clone())?,
        None => Keys::open(),
    };
    check_listen(options.listen, keys.required())
}

/// Serves `memory` until SIGTERM or SIGINT; `announce` is called with the
/// bound address once requests are accepted.
pub fn run(
    memory: Memory,
    options: &ServeOptions,
    announce: impl FnOnce(SocketAddr, &Keys),
) -> Result<(), ServeError> {
    let keys = match &options.keys {
        Some(path) => Keys::from_file(path.clone())?,
        None => Keys::open(),
    };
    check_listen(options.listen, keys.required())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strataflow-serve")
        .build()?;
    runtime.block_on(async move {
        let service = Arc::new(Service::start(
            memory,
            ServiceOptions {
                queue: options.queue,
                append_timeout: options.append_timeout,
                min_seq_wait: options.min_seq_wait,
            },
        )?);
        let listener = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(|source| ServeError::Bind {
                listen: options.listen,
                source,
            })?;
        let bound = listener.local_addr()?;
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
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                stop_signal().await;
                cancel.cancel();
            })
            .await?;
        tracing::info!("stopped accepting; draining the ingest queue");
        service
            .drain()
            .await
            .map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))?;
        Ok(())
    })
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
async fn stop_signal() {
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
