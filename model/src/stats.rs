//! Counts of model calls: live counters of one gateway, and the same totals
//! computed from the log for `status`.

use std::sync::atomic::{AtomicU64, Ordering};

use strataflow_log::record::{Record, RecordKind, TokenUsage};
use strataflow_log::{Store, StoreError};

use super::response::parse_completion;

/// Model calls and tokens.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct ModelCallStats {
    /// Calls made to the service and recorded (paid for).
    pub made: u64,
    /// Requests answered from a recorded call, with no HTTP request.
    pub served_from_log: u64,
    /// Requests answered from a call another process made (the shared
    /// calls: a cluster's calls stream), copied into this log, with no
    /// HTTP request.
    pub served_from_shared: u64,
    /// Requests that ended in an error (offline miss, service unavailable,
    /// unusable answer, configuration). From the log: recorded calls whose
    /// answer is unusable.
    pub failed: u64,
    /// HTTP requests retried (beyond the first attempt of each call).
    pub retries: u64,
    /// Prompt tokens of the calls made.
    pub prompt_tokens: u64,
    /// Completion tokens of the calls made.
    pub completion_tokens: u64,
}

/// The live counters behind [`ModelCallStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    made: AtomicU64,
    served_from_log: AtomicU64,
    served_from_shared: AtomicU64,
    failed: AtomicU64,
    retries: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
}

impl Counters {
    pub(crate) fn made(&self, usage: TokenUsage, attempts: u32) {
        self.made.fetch_add(1, Ordering::Relaxed);
        self.retries
            .fetch_add(u64::from(attempts.saturating_sub(1)), Ordering::Relaxed);
        self.prompt_tokens
            .fetch_add(u64::from(usage.prompt_tokens), Ordering::Relaxed);
        self.completion_tokens
            .fetch_add(u64::from(usage.completion_tokens), Ordering::Relaxed);
    }

    pub(crate) fn served_from_log(&self) {
        self.served_from_log.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn served_from_shared(&self) {
        self.served_from_shared.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ModelCallStats {
        ModelCallStats {
            made: self.made.load(Ordering::Relaxed),
            served_from_log: self.served_from_log.load(Ordering::Relaxed),
            served_from_shared: self.served_from_shared.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            completion_tokens: self.completion_tokens.load(Ordering::Relaxed),
        }
    }
}

/// Totals over every `ModelCall` in the log (O(model calls), through the
/// kind index): `made` = records, `failed` = records whose stored answer is
/// unusable, tokens summed; `served_from_log`, `served_from_shared` and
/// `retries` are not recorded and stay 0 (a call copied from the shared
/// calls counts as made here: subtract the run counters' count of them).
pub fn model_call_totals(store: &Store) -> Result<ModelCallStats, StoreError> {
    let mut stats = ModelCallStats::default();
    for entry in store.ids_of_kind(RecordKind::ModelCall) {
        let (_, id) = entry?;
        let Some(stored) = store.get(&id)? else {
            continue;
        };
        let Record::ModelCall(call) = stored.record else {
            continue;
        };
        stats.made += 1;
        if parse_completion(&call.response).is_err() {
            stats.failed += 1;
        }
        stats.prompt_tokens += u64::from(call.usage.prompt_tokens);
        stats.completion_tokens += u64::from(call.usage.completion_tokens);
    }
    Ok(stats)
}
