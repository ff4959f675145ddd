//! Request extractors whose refusals are the API's one-line JSON errors,
//! naming the field at fault (`serde_path_to_error`).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A JSON body of type `T`.
pub struct JsonBody<T>(pub T);

/// The query string as type `T`.
pub struct QueryArgs<T>(pub T);

/// A body's bytes, or 413 past the server's limit.
pub async fn body_bytes<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            let status = rejection.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    status,
                    "too_large",
                    "the body is larger than the server's limit (--max-body)",
                )
            } else {
                ApiError::new(status, "bad_body", rejection.body_text())
            }
        })
}

/// Parses JSON text as `T`, naming the path of a field of the wrong type.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let problem = inner.to_string();
        if inner.is_syntax() || inner.is_eof() {
            ApiError::invalid(format!("malformed JSON: {problem}")).with_code("malformed_json")
        } else if path == "." {
            ApiError::invalid(problem)
        } else {
            ApiError::invalid(format!("`{path}`: {problem}")).at_field(path)
        }
    })
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = body_bytes(request, state).await?;
        if bytes.is_empty() {
            return Err(ApiError::invalid("the body is empty: send a JSON object")
                .with_code("malformed_json"));
        }
        parse_json(&bytes).map(JsonBody)
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryArgs<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(query));
        serde_path_to_error::deserialize(de)
            .map(QueryArgs)
            .map_err(|e| {
                let path = e.path().to_string();
                let problem = e.into_inner().to_string();
                if path == "." {
                    ApiError::invalid(format!("query string: {problem}"))
                } else {
                    ApiError::invalid(format!("query parameter `{path}`: {problem}")).at_field(path)
                }
            })
    }
}

fn form_urlencoded_parse(query: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(query.as_bytes())
}
