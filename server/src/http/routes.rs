//! The `/v1` routes: each one parses its arguments, calls the
//! [`Service`](crate::service::Service) and answers the CLI's `--json`
//! shape, with the log sequence it reflects in the `strataflow-seq` header.

use axum::Extension;
use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use strataflow::log::record::GovernanceAction;

use super::AppState;
use super::auth::Caller;
use super::error::ApiError;
use super::extract::{JsonBody, QueryArgs, body_bytes, parse_json};
use crate::service::Answer;
use crate::service::keyed::{
    ForgetMemoryParams, PurgeMemoryParams, RecallMemoryParams, RememberMemoryParams,
};
use crate::service::params::{
    AssessParams, BlocksParams, ContextParams, EventsParams, ExpandParams, GovernParams,
    GraphParams, SearchParams, ShowParams, TenantParams, UseParams,
};

/// Header carrying the log sequence an answer reflects.
pub const SEQ_HEADER: &str = "strataflow-seq";

/// An answer as a response.
fn answer(result: Result<Answer, ApiError>) -> Response {
    match result {
        Ok(a) => {
            let mut response = axum::Json(a.body).into_response();
            response
                .headers_mut()
                .insert(SEQ_HEADER, HeaderValue::from(a.seq));
            response
        }
        Err(e) => e.into_response(),
    }
}

/// Any serialisable value as a response, with its sequence.
fn seq_json<T: serde::Serialize>(seq: u64, value: &T) -> Response {
    let mut response = axum::Json(value).into_response();
    response
        .headers_mut()
        .insert(SEQ_HEADER, HeaderValue::from(seq));
    response
}

/// Query string of `POST /v1/messages`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessagesQuery {
    /// Tenant of the messages that name none (default: the key's).
    pub tenant: Option<String>,
}

/// `POST /v1/messages`: one message or an array, all or nothing.
pub async fn messages(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(query): QueryArgs<MessagesQuery>,
    request: Request,
) -> Response {
    let bytes = match body_bytes(request, &()).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let items = match parse_json::<Value>(&bytes) {
        Ok(Value::Array(items)) => items,
        Ok(item @ Value::Object(_)) => vec![item],
        Ok(_) => {
            return ApiError::invalid("the body must be a message object or an array of them")
                .into_response();
        }
        Err(e) => return e.into_response(),
    };
    match state
        .service
        .remember(&caller, query.tenant.as_deref(), items)
        .await
    {
        Ok(done) => seq_json(done.seq, &done),
        Err(e) => e.into_response(),
    }
}

/// Query string of `POST /v1/ingest`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestQuery {
    /// Tenant (default: the key's).
    pub tenant: Option<String>,
    /// `jsonl` (default) or `locomo`.
    pub format: Option<String>,
    /// Store the valid items and list the invalid ones instead of refusing.
    #[serde(default)]
    pub skip_invalid: bool,
    /// LoCoMo only: the thread of a conversation without a `sample_id`
    /// (the CLI names it after the file; default `request`).
    pub thread: Option<String>,
}

/// `POST /v1/ingest`: a JSONL or LoCoMo body.
pub async fn ingest(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(query): QueryArgs<IngestQuery>,
    request: Request,
) -> Response {
    let bytes = match body_bytes(request, &()).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return ApiError::invalid("the body is not UTF-8 text").into_response();
    };
    let format = query.format.as_deref().unwrap_or("jsonl");
    match state
        .service
        .ingest(
            &caller,
            query.tenant.as_deref(),
            format,
            query.skip_invalid,
            query.thread.as_deref(),
            text,
        )
        .await
    {
        Ok(summary) => seq_json(summary.seq, &summary),
        Err(e) => e.into_response(),
    }
}

/// `POST /v1/search`.
pub async fn search(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(p): JsonBody<SearchParams>,
) -> Response {
    answer(state.service.search(&caller, p).await)
}

/// `POST /v1/expand`.
pub async fn expand(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(p): JsonBody<ExpandParams>,
) -> Response {
    answer(state.service.expand(&caller, p).await)
}

/// `GET /v1/context`.
pub async fn context(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(p): QueryArgs<ContextParams>,
) -> Response {
    answer(state.service.context(&caller, p).await)
}

/// `GET /v1/events`.
pub async fn events(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(p): QueryArgs<EventsParams>,
) -> Response {
    answer(state.service.events(&caller, p).await)
}

/// `GET /v1/graph`.
pub async fn graph(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(p): QueryArgs<GraphParams>,
) -> Response {
    answer(state.service.graph(&caller, p).await)
}

/// `GET /v1/blocks`.
pub async fn blocks(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(p): QueryArgs<BlocksParams>,
) -> Response {
    answer(state.service.blocks(&caller, p).await)
}

/// Query string of `GET /v1/records/{id}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowQuery {
    /// Tenant (default: the key's).
    pub tenant: Option<String>,
    /// Wait until the log reaches this sequence.
    pub min_seq: Option<u64>,
}

/// `GET /v1/records/{id}`.
pub async fn show(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    axum::extract::Path(id): axum::extract::Path<String>,
    QueryArgs(q): QueryArgs<ShowQuery>,
) -> Response {
    let p = ShowParams {
        tenant: q.tenant,
        id,
        min_seq: q.min_seq,
    };
    answer(state.service.show(&caller, p).await)
}

/// `GET /v1/stats`.
pub async fn stats(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(p): QueryArgs<TenantParams>,
) -> Response {
    answer(state.service.stats(&caller, p).await)
}

/// `GET /v1/status`.
pub async fn status(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(p): QueryArgs<TenantParams>,
) -> Response {
    answer(state.service.status(&caller, p).await)
}

/// `GET /v1/weights`.
pub async fn weights(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(p): QueryArgs<TenantParams>,
) -> Response {
    answer(state.service.weights(&caller, p).await)
}

/// `GET /v1/views`.
pub async fn views(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryArgs(p): QueryArgs<TenantParams>,
) -> Response {
    answer(state.service.views(&caller, p).await)
}

/// `POST /v1/assess`.
pub async fn assess(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(p): JsonBody<AssessParams>,
) -> Response {
    answer(state.service.assess(&caller, p).await)
}

/// `POST /v1/use`.
pub async fn use_refs(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(p): JsonBody<UseParams>,
) -> Response {
    answer(state.service.use_refs(&caller, p).await)
}

macro_rules! governance_route {
    ($name:ident, $action:expr, $doc:literal) => {
        #[doc = $doc]
        pub async fn $name(
            State(state): State<AppState>,
            Extension(caller): Extension<Caller>,
            JsonBody(p): JsonBody<GovernParams>,
        ) -> Response {
            answer(state.service.govern(&caller, $action, p).await)
        }
    };
}

governance_route!(forget, GovernanceAction::Forget, "`POST /v1/forget`.");
governance_route!(restore, GovernanceAction::Restore, "`POST /v1/restore`.");
governance_route!(pin, GovernanceAction::Pin, "`POST /v1/pin`.");
governance_route!(unpin, GovernanceAction::Unpin, "`POST /v1/unpin`.");

/// The refusal of a body that names a namespace on a route whose path
/// names it.
fn namespace_in_body(body: Option<&str>) -> Option<Response> {
    body.map(|_| {
        ApiError::invalid("the namespace is in the path, not the body")
            .at_field("namespace")
            .into_response()
    })
}

/// `POST /v1/memories/{namespace}`: remember a keyed memory.
pub async fn remember_memory(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    axum::extract::Path(namespace): axum::extract::Path<String>,
    JsonBody(p): JsonBody<RememberMemoryParams>,
) -> Response {
    if let Some(refused) = namespace_in_body(p.namespace.as_deref()) {
        return refused;
    }
    answer(
        state
            .service
            .remember_memory(&caller, Some(namespace), p)
            .await,
    )
}

/// `POST /v1/memories/{namespace}/recall`: the keyed memories most like a
/// text.
pub async fn recall_memory(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    axum::extract::Path(namespace): axum::extract::Path<String>,
    JsonBody(p): JsonBody<RecallMemoryParams>,
) -> Response {
    if let Some(refused) = namespace_in_body(p.namespace.as_deref()) {
        return refused;
    }
    answer(
        state
            .service
            .recall_memory(&caller, Some(namespace), p)
            .await,
    )
}

/// Query string of `DELETE /v1/memories/{namespace}/{id}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgetMemoryQuery {
    /// Tenant (default: the key's).
    pub tenant: Option<String>,
}

/// `DELETE /v1/memories/{namespace}/{id}`: forget a keyed memory.
pub async fn forget_memory(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    axum::extract::Path((namespace, id)): axum::extract::Path<(String, String)>,
    QueryArgs(q): QueryArgs<ForgetMemoryQuery>,
) -> Response {
    let p = ForgetMemoryParams {
        tenant: q.tenant,
        ..ForgetMemoryParams::default()
    };
    answer(
        state
            .service
            .forget_memory(&caller, Some((namespace, id)), p)
            .await,
    )
}

/// `POST /v1/memories/purge`: purge keyed memories by age.
pub async fn purge_memories(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(p): JsonBody<PurgeMemoryParams>,
) -> Response {
    answer(state.service.purge_memories(&caller, p).await)
}
