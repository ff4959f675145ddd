//! Test doubles for integration tests that need a service: `mod support;`
//! then `support::model_server::…`.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

pub mod llm_profile;
pub mod mirror_model;
pub mod model_server;
pub mod nats;
