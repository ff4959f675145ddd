//! Model calls shared with other processes: what the recording gateway
//! asks after its own log and before the model, and where it offers every
//! call it makes (in a cluster, the calls stream of `strataflow-cluster`).
//!
//! Each request is then paid for once across the processes that share the
//! log, and every one of them answers from the same recorded response, the
//! first one offered for its request key, even from a nondeterministic
//! model.

use strataflow_log::Digest;
use strataflow_log::record::ModelCall;

/// Why a [`SharedCalls`] did not answer: the implementation's own typed
/// error, boxed (the gateway reports it as
/// [`ModelError::SharedCalls`](strataflow_operators::model::ModelError::SharedCalls)).
pub type SharedCallsError = Box<dyn std::error::Error + Send + Sync>;

/// A log of model calls shared with other processes, keyed by request
/// hash, where the first call offered for a key is the one kept.
pub trait SharedCalls: Send + Sync {
    /// What it is, for errors (e.g. `stream strataflow_calls`).
    fn name(&self) -> String;

    /// The call kept for a request key, if there is one.
    fn find(&self, key: &Digest) -> Result<Option<ModelCall>, SharedCallsError>;

    /// Offers a call just made: kept if it is the first for its request
    /// key. Returns the call kept, `call` itself or the first writer's.
    fn offer(&self, call: ModelCall) -> Result<ModelCall, SharedCallsError>;
}
