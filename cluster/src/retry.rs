//! Requests to JetStream that survive a server failing: each attempt
//! bounded in time, a failed or timed-out one tried again with doubling
//! backoff for a while (a leader being elected, the client reconnecting to
//! another server), then an error naming the request.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::ClusterError;
use crate::publish::{ATTEMPT_TIMEOUT, FIRST_BACKOFF, MAX_BACKOFF};

/// What one attempt of a request gave.
pub(crate) enum Attempt<T> {
    /// An answer.
    Done(T),
    /// A failure worth another attempt (a server killed, a leader
    /// election, no responders yet).
    Again(String),
    /// A failure another attempt would repeat.
    Fatal(ClusterError),
}

/// Runs `attempt` until it answers: each attempt bounded by
/// [`ATTEMPT_TIMEOUT`] (or `retry_for`, if shorter, at least a second), a
/// failed or timed-out one tried again with backoff until `retry_for` has
/// passed since the first failure.
pub(crate) async fn retried<T, F, A>(
    retry_for: Duration,
    what: String,
    mut attempt: F,
) -> Result<T, ClusterError>
where
    F: FnMut() -> A,
    A: Future<Output = Attempt<T>>,
{
    let bound = ATTEMPT_TIMEOUT.min(retry_for.max(Duration::from_secs(1)));
    let mut failing: Option<(Instant, Duration)> = None;
    loop {
        let detail = match tokio::time::timeout(bound, attempt()).await {
            Ok(Attempt::Done(answer)) => return Ok(answer),
            Ok(Attempt::Fatal(e)) => return Err(e),
            Ok(Attempt::Again(detail)) => detail,
            Err(_) => format!("no answer within {bound:?}"),
        };
        let (since, backoff) = failing.get_or_insert((Instant::now(), FIRST_BACKOFF));
        if since.elapsed() >= retry_for {
            return Err(ClusterError::js(
                format!("{what} (retried for {:?})", since.elapsed()),
                detail,
            ));
        }
        tracing::debug!(what, detail, "JetStream request failed; trying again");
        tokio::time::sleep(*backoff).await;
        *backoff = (*backoff * 2).min(MAX_BACKOFF);
    }
}
