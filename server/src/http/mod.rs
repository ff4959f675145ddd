//! The HTTP/JSON API (`docs/http-api.md`): routes, and the layers every
//! request passes (metrics, time-out, body limit, authentication).

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::metrics::{Gauge, Metrics};
use crate::service::Service;

pub mod auth;
pub mod error;
pub mod extract;
pub mod routes;

use error::ApiError;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The operations.
    pub service: Arc<Service>,
    /// Request counts and latency.
    pub metrics: Arc<Metrics>,
    /// The keys.
    pub keys: Arc<auth::Keys>,
}

/// The whole router: `/healthz` and `/metrics` beside the authenticated
/// `/v1` routes.
pub fn router(
    state: AppState,
    max_body_bytes: usize,
    timeout: std::time::Duration,
    mcp: Option<Router>,
) -> Router {
    let api = Router::new()
        .route("/v1/messages", post(routes::messages))
        .route("/v1/ingest", post(routes::ingest))
        .route("/v1/search", post(routes::search))
        .route("/v1/expand", post(routes::expand))
        .route("/v1/context", get(routes::context))
        .route("/v1/events", get(routes::events))
        .route("/v1/graph", get(routes::graph))
        .route("/v1/blocks", get(routes::blocks))
        .route("/v1/records/{id}", get(routes::show))
        .route("/v1/stats", get(routes::stats))
        .route("/v1/status", get(routes::status))
        .route("/v1/weights", get(routes::weights))
        .route("/v1/views", get(routes::views))
        .route("/v1/assess", post(routes::assess))
        .route("/v1/use", post(routes::use_refs))
        .route("/v1/forget", post(routes::forget))
        .route("/v1/restore", post(routes::restore))
        .route("/v1/pin", post(routes::pin))
        .route("/v1/unpin", post(routes::unpin))
        .route("/v1/memories/purge", post(routes::purge_memories))
        .route("/v1/memories/{namespace}", post(routes::remember_memory))
        .route(
            "/v1/memories/{namespace}/recall",
            post(routes::recall_memory),
        )
        .route(
            "/v1/memories/{namespace}/{id}",
            axum::routing::delete(routes::forget_memory),
        )
        .route_layer(middleware::from_fn_with_state(timeout, time_limit))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&state.keys),
            auth::authenticate,
        ));
    let metrics_route =
        Router::new()
            .route("/metrics", get(metrics))
            .route_layer(middleware::from_fn_with_state(
                Arc::clone(&state.keys),
                admin_only,
            ));
    let keys = Arc::clone(&state.keys);
    let metrics = Arc::clone(&state.metrics);
    let mut app = Router::new()
        .route("/healthz", get(healthz))
        .merge(metrics_route)
        .merge(api)
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .with_state(state);
    if let Some(mcp) = mcp {
        // Streamable HTTP keeps event streams open: no time limit there.
        app = app.merge(mcp.layer(middleware::from_fn_with_state(keys, auth::authenticate)));
    }
    app.layer(middleware::from_fn_with_state(metrics, count))
}

/// Counts each request under its route template (never the raw path, so
/// ids do not make the metrics grow without bound).
async fn count(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().clone();
    let started = Instant::now();
    let response = next.run(request).await;
    let took = started.elapsed();
    metrics.observe(&route, response.status().as_u16(), took);
    tracing::info!(
        %method,
        route,
        status = response.status().as_u16(),
        micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        "request"
    );
    response
}

/// Answers 503 when a request takes longer than the server's limit.
async fn time_limit(
    State(limit): State<std::time::Duration>,
    request: Request,
    next: Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::unavailable(
            format!("the request took longer than {} s", limit.as_secs()),
            1,
        )
        .into_response(),
    }
}

/// `/metrics` needs an admin key when the server has keys (the counts span
/// every tenant).
async fn admin_only(State(keys): State<Arc<auth::Keys>>, request: Request, next: Next) -> Response {
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match keys.caller(header) {
        Ok(c) if c.scope == crate::keys::Scope::Admin => next.run(request).await,
        Ok(_) => ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "/metrics spans every tenant: it needs an admin key",
        )
        .into_response(),
        Err(e) => e.into_response(),
    }
}

async fn healthz(State(state): State<AppState>) -> Response {
    match state.service.last_seq() {
        Ok(seq) => {
            let mut response =
                axum::Json(serde_json::json!({"status": "ok", "seq": seq})).into_response();
            response
                .headers_mut()
                .insert(routes::SEQ_HEADER, axum::http::HeaderValue::from(seq));
            response
        }
        Err(e) => e.into_response(),
    }
}

async fn metrics(State(state): State<AppState>) -> Response {
    let gauges: Vec<Gauge> = match state.service.gauges() {
        Ok(g) => g,
        Err(e) => return e.into_response(),
    };
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(&gauges),
    )
        .into_response()
}

async fn unknown_route(request: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route {} {}",
        request.method(),
        request.uri().path()
    ))
}

async fn wrong_method(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{} is not allowed on {}",
            request.method(),
            request.uri().path()
        ),
    )
}
