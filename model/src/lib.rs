//! # strataflow-model
//!
//! What answers model-backed operators: an OpenAI-compatible chat client
//! ([`client`]) behind a gateway that records every call in the log and
//! serves recorded calls from it ([`gateway`]), the `openai-embeddings@1`
//! embedder recorded the same way ([`embeddings`]), the parsing of a chat
//! completion into the operator's arguments ([`response`]), the settings
//! ([`settings`]), the call counters ([`stats`]) and the seam to calls
//! shared with other processes ([`shared`]).

pub mod client;
pub mod embeddings;
pub mod gateway;
pub mod response;
pub mod settings;
pub mod shared;
pub mod stats;

pub use client::{Completion, ModelClient};
pub use embeddings::{EmbeddingSettings, OpenAiEmbedder};
pub use gateway::RecordingGateway;
pub use response::{CompletionAnswer, parse_completion};
pub use settings::ModelSettings;
pub use shared::{SharedCalls, SharedCallsError};
pub use stats::{ModelCallStats, model_call_totals};
