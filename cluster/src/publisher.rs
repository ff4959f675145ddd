//! The streaming ingester's clustered form: a long-lived handle that an
//! embedding program (or a clustered `serve`) gives messages as they
//! happen, and that publishes them to the shared raw-message stream
//! instead of storing them locally. A message is acknowledged once the
//! stream has stored it with its replicas; the node owning its tenant's
//! partition stores and derives it.
//!
//! It has the shape of the local streaming ingester
//! (`strataflow_pipeline::stream::Ingester`): `append_json` for one
//! message in the JSONL input format, `append_batch` for a group stored
//! all or nothing; the answer is each message's record id and whether it
//! was new. Its calls block (the NATS client runs on the connection's own
//! runtime): call them from a plain thread, or through
//! `tokio::task::spawn_blocking` in async code.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use strataflow_pipeline::source::jsonl::parse_line;
use strataflow_pipeline::source::{InputError, MessageInput};

use crate::publish::{PublishOptions, PublishedMessage, Refused, publish_messages};
use crate::{ClusterError, Connection, Subjects};

/// Why messages were not published.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamPublishError {
    /// A message is not valid input (the field at fault is named); nothing
    /// was published.
    #[error(transparent)]
    Invalid(InputError),
    /// A message conflicts with the stream (same thread and id, other
    /// content) or with an earlier message of the same call; nothing of
    /// the call was published.
    #[error("message {index}: {error}")]
    Conflict {
        /// Its index in the call.
        index: usize,
        /// What is wrong.
        error: InputError,
    },
    /// The stream could not be reached or did not store the messages in
    /// time; publishing the same messages again is safe.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// Publishes messages to the shared raw-message stream as they come.
pub struct StreamPublisher {
    connection: Connection,
    options: PublishOptions,
    stream: String,
    /// Held while a call publishes: a thread's next position is read back
    /// from the stream, so two calls of one thread at once could take the
    /// same position.
    one_at_a_time: Mutex<()>,
    /// Messages given to `append_json`, numbering them in errors.
    received: AtomicU64,
}

impl StreamPublisher {
    /// Connects to NATS at `url` (comma-separated for a cluster) and
    /// opens the raw-message stream, creating it with `options.partitions`
    /// partitions if it does not exist; `options.partitions` becomes the
    /// stream's own count.
    pub fn connect(url: &str, mut options: PublishOptions) -> Result<Self, ClusterError> {
        let connection = Connection::connect(url)?;
        let subjects = Subjects::new(&options.prefix)?;
        let replicas = options
            .replicas
            .unwrap_or(if connection.clustered() { 3 } else { 1 });
        let (_, partitions) = connection.raw_stream(&subjects, options.partitions, replicas)?;
        options.partitions = partitions;
        Ok(Self {
            connection,
            options,
            stream: subjects.stream(),
            one_at_a_time: Mutex::new(()),
            received: AtomicU64::new(0),
        })
    }

    /// The stream's name.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// The stream's partition count.
    pub fn partitions(&self) -> u32 {
        self.options.partitions
    }

    /// The connection (its URL, whether the server is clustered).
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// Publishes `messages` as one unit: all are checked against their
    /// threads in the stream (and against each other) before any is sent,
    /// so a conflict publishes nothing; returns once each is stored with
    /// its replicas, in the call's order.
    pub fn append_batch(
        &self,
        messages: Vec<MessageInput>,
    ) -> Result<Vec<PublishedMessage>, StreamPublishError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        // A poisoned lock guards nothing: the stream is read back anyway.
        let _one = self
            .one_at_a_time
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match publish_messages(&self.connection, messages, &self.options)? {
            Ok(published) => Ok(published),
            Err(Refused { index, error }) => Err(StreamPublishError::Conflict { index, error }),
        }
    }

    /// Parses one message in the JSONL input format (docs/format.md) and
    /// publishes it; a bad message is refused before anything is sent,
    /// with the field at fault (its location is `stream:N`, N counting the
    /// messages given to this call).
    pub fn append_json(&self, json: &str) -> Result<PublishedMessage, StreamPublishError> {
        let n = self.received.fetch_add(1, Ordering::Relaxed) + 1;
        let input = parse_line("stream", usize::try_from(n).unwrap_or(usize::MAX), json)
            .map_err(StreamPublishError::Invalid)?;
        let mut published = self.append_batch(vec![input])?;
        published.pop().ok_or_else(|| {
            StreamPublishError::Cluster(ClusterError::js(
                "publish",
                "the stream acknowledged no message",
            ))
        })
    }
}
