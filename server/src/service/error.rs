//! How a failure of the memory becomes an HTTP status and a one-line
//! JSON error (and, through it, an MCP error).

use axum::http::StatusCode;
use strataflow::log::StoreError;
use strataflow::{
    EvidenceError, ImportError, KeyedMemoryError, MemoryError, ProfileError, QueryError,
};

use crate::http::error::ApiError;

/// The refusal for a memory error: 400 for a bad argument, 404 for what
/// does not exist (or belongs to another tenant: the same answer), 409 for
/// a state that forbids the call, 503 for a damaged or busy store, 500
/// otherwise.
pub fn from_memory(e: MemoryError) -> ApiError {
    let message = e.to_string();
    match &e {
        MemoryError::Query(q) => match q {
            QueryError::NotFound { .. }
            | QueryError::UnknownThread { .. }
            | QueryError::NoNode { .. } => ApiError::not_found(message),
            QueryError::InvalidFilter { field, value, .. } => ApiError::invalid(
                // The facade names CLI options (`--from`); a request names fields.
                message
                    .replace(&format!("--{field} "), &format!("`{field}` "))
                    .replace("--", ""),
            )
            .at_field(*field)
            .with_value(value),
            QueryError::InvalidId { .. } | QueryError::Ambiguous { .. } => {
                ApiError::invalid(message)
            }
            QueryError::BlockNotReady { .. } => {
                ApiError::new(StatusCode::CONFLICT, "not_ready", message)
            }
            _ => ApiError::invalid(message),
        },
        MemoryError::Evidence(ev) => match ev {
            EvidenceError::BatchClosed { .. } | EvidenceError::NotAssessed { .. } => {
                ApiError::new(StatusCode::CONFLICT, "batch_state", message)
            }
            _ => ApiError::invalid(message),
        },
        MemoryError::Profile(p) => match p {
            ProfileError::NotFound { .. } => ApiError::not_found(message).at_field("profile"),
            _ => ApiError::invalid(message).at_field("profile"),
        },
        MemoryError::Import(i) => match i {
            ImportError::AlreadyUndone { .. } | ImportError::Undone { .. } => {
                ApiError::new(StatusCode::CONFLICT, "import_state", message)
            }
            _ => ApiError::invalid(message),
        },
        MemoryError::Store(s) => from_store(s, message),
        MemoryError::KeyedMemory(k) => match k {
            KeyedMemoryError::Embed { .. } => {
                ApiError::new(StatusCode::BAD_GATEWAY, "embedding_failed", message)
            }
            KeyedMemoryError::Empty { field } | KeyedMemoryError::KeyTooLong { field, .. } => {
                ApiError::invalid(message).at_field(*field)
            }
            KeyedMemoryError::Limit { .. } => ApiError::invalid(message).at_field("limit"),
            KeyedMemoryError::PurgeLimit => ApiError::invalid(message).at_field("limit"),
            KeyedMemoryError::MinSimilarity { .. } => {
                ApiError::invalid(message).at_field("min_similarity")
            }
            KeyedMemoryError::DuplicateMetadata { .. } => {
                ApiError::invalid(message).at_field("metadata")
            }
            KeyedMemoryError::OlderThan { .. } => ApiError::invalid(message).at_field("older_than"),
            _ => ApiError::new(StatusCode::CONFLICT, "no_embedder", message),
        },
        _ => ApiError::internal(message),
    }
}

fn from_store(e: &StoreError, message: String) -> ApiError {
    match e {
        StoreError::Damaged { .. } | StoreError::Corrupt { .. } => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "damaged", message)
        }
        _ => ApiError::internal(message),
    }
}
