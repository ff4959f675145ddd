//! The HTTP/JSON API (`docs/http-api.md`).

pub mod auth;
pub mod error;
