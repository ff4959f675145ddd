//! The one-line JSON error every route answers with when it refuses.
//!
//! `{"error": {"status": 400, "code": "invalid_argument", "message": "…"}}`
//! plus, where they apply, `index` (the 0-based item of a batch), `field`
//! and `seq` (the log sequence the server reflects, on a 503 of `min_seq`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A refusal: its status, a stable machine code and a one-line message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApiError {
    /// HTTP status.
    #[serde(serialize_with = "status_code")]
    pub status: StatusCode,
    /// Stable code a client branches on (`invalid_argument`, `unauthorized`…).
    pub code: &'static str,
    /// What is wrong, in one line.
    pub message: String,
    /// Where, when it applies (boxed: most refusals have none).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub at: Option<Box<Place>>,
    /// Seconds after which a retry may succeed (sent as `Retry-After`).
    #[serde(skip)]
    pub retry_after: Option<u32>,
}

/// Where a refusal applies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Place {
    /// The 0-based item of a batch at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// The field at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The value at fault, cut to 72 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The log sequence the server reflects (on `min_seq` time-outs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

fn status_code<S: serde::Serializer>(s: &StatusCode, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_u16(s.as_u16())
}

impl ApiError {
    /// A refusal with `status`, `code` and `message`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            // One line, whatever the cause's text holds.
            message: message.into().replace(['\n', '\r'], " "),
            at: None,
            retry_after: None,
        }
    }

    fn place(&mut self) -> &mut Place {
        self.at.get_or_insert_with(Box::default)
    }

    /// The field at fault, if one is named.
    pub fn field(&self) -> Option<&str> {
        self.at.as_ref().and_then(|p| p.field.as_deref())
    }

    /// 400 `invalid_argument`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_argument", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 500 `internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// 503 `unavailable`, retry after `secs`.
    pub fn unavailable(message: impl Into<String>, secs: u32) -> Self {
        let mut e = Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message);
        e.retry_after = Some(secs);
        e
    }

    /// The same refusal under another machine code.
    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = code;
        self
    }

    /// The same refusal naming the batch item at fault.
    pub fn at_index(mut self, index: usize) -> Self {
        self.place().index = Some(index);
        self
    }

    /// The same refusal naming the field at fault.
    pub fn at_field(mut self, field: impl Into<String>) -> Self {
        self.place().field = Some(field.into());
        self
    }

    /// The same refusal quoting the value at fault (cut to 72 characters).
    pub fn with_value(mut self, value: &str) -> Self {
        self.place().value = Some(value.chars().take(72).collect());
        self
    }

    /// The same refusal, retryable after `secs` seconds (`Retry-After`).
    pub fn retry(mut self, secs: u32) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// The same refusal with the sequence the server reflects.
    pub fn with_seq(mut self, seq: u64) -> Self {
        self.place().seq = Some(seq);
        self
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl std::error::Error for ApiError {}

#[derive(Serialize)]
struct Envelope<'a> {
    error: &'a ApiError,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_string(&Envelope { error: &self })
            .unwrap_or_else(|_| String::from("{\"error\":{\"code\":\"internal\"}}"));
        let mut response = (self.status, body + "\n").into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn renders_one_line_of_json_with_the_fields_that_apply() {
        let e = ApiError::invalid("bad role\n`x`")
            .at_index(3)
            .at_field("role");
        let json = serde_json::to_string(&Envelope { error: &e }).unwrap();
        assert_eq!(
            json,
            r#"{"error":{"status":400,"code":"invalid_argument","message":"bad role `x`","index":3,"field":"role"}}"#
        );
        let r = ApiError::unavailable("busy", 2).into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
    }
}
