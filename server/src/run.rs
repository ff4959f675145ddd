//! Running a server: the runtime, the listener, and a clean stop on
//! SIGTERM or SIGINT (stop accepting, drain the ingest queue, flush, exit).

use std::net::SocketAddr;
use std::sync::Arc;

use strataflow::Memory;

use crate::http::{self, AppState, auth::Keys};
use crate::metrics::Metrics;
use crate::options::{ServeError, ServeOptions, check_listen};
use crate::service::{Service, ServiceOptions};

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
        let app = http::router(state, options.max_body_bytes, options.request_timeout);
        axum::serve(listener, app)
            .with_graceful_shutdown(stop_signal())
            .await?;
        tracing::info!("stopped accepting; draining the ingest queue");
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
