//! Publishing raw messages: the JetStream side of the pipeline's
//! [`LogSink`].
//!
//! Each valid message of the input (validated exactly as `ingest` does,
//! through [`strataflow_pipeline::ingest::ingest_into`]) becomes its Message
//! record at its position in the thread, encoded as the log stores it, and
//! is published to its thread's subject with `Nats-Msg-Id` = the record id.
//! A thread the stream already holds is read back first, so that its
//! positions continue from the stored ones, a message already there (same
//! content) is skipped, and the same id with other content is refused like
//! a conflict with the local log. A message counts as acknowledged once
//! JetStream's publish ack arrives (stored with its replicas).
//!
//! Order per thread holds by construction: at most one publish per thread
//! is unacknowledged at a time (publishes of different threads are
//! pipelined, up to [`IN_FLIGHT`]; a message whose thread has one waits,
//! up to 8192 in all, while the input is read on), and a publish that fails or times out
//! (a server killed, a leader election) is sent again, the same message
//! with the same `Nats-Msg-Id`, with bounded backoff until
//! [`PublishOptions::publish_timeout`] has passed since its first failure;
//! the client reconnects to another server meanwhile. Every wait on the
//! client (sending a publish, its ack, a read of a thread) is bounded by
//! [`ATTEMPT_TIMEOUT`] per attempt, so a server that answers nothing (paused,
//! partitioned) is a failure retried like any other, never a wait without end. A retried publish
//! that had in fact been stored is dropped by JetStream as a duplicate, and
//! the next message of its thread is only sent once it is acknowledged, so
//! a failure can never put a later message of a thread before an earlier
//! one.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::time::{Duration, Instant};

use async_nats::jetstream::{
    self,
    context::{PublishAckFuture, PublishError, PublishErrorKind},
};
use strataflow_log::envelope::{decode, encode_with_id};
use strataflow_log::record::{Message, Record};
use strataflow_pipeline::ingest::{IngestError, IngestStats, OnInvalid, Source};
use strataflow_pipeline::log_seam::{Known, LogSink};
use strataflow_pipeline::source::{InputError, Location, MessageInput};

use crate::{ClusterError, Connection, Subjects};

/// Publish acks awaited at most this many at once (each of another
/// thread).
pub const IN_FLIGHT: usize = 512;

/// Messages held at most, in all, behind their thread's unacknowledged
/// publish, before the input is read on.
const MAX_HELD: usize = 8192;

/// The first wait before a publish is sent again; it doubles up to
/// [`MAX_BACKOFF`].
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(50);

/// The longest wait between two attempts of one publish.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The longest wait for one attempt of anything the publisher asks the
/// client (sending a publish, its ack, a read of a thread): an attempt that
/// has not finished by then counts as failed and is retried like one that
/// failed (never longer than the publish timeout itself).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a publish (or a read of a thread) is retried after its first
/// failure, unless `--publish-timeout` says otherwise.
pub const DEFAULT_PUBLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// What a publication did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishReport {
    /// The stream.
    pub stream: String,
    /// Its partition count.
    pub partitions: u32,
    /// Its replicas.
    pub replicas: usize,
    /// Messages the stream stored.
    pub published: u64,
    /// Messages JetStream dropped as duplicates (same id in its window) on
    /// their first attempt.
    pub duplicates: u64,
    /// Attempts sent again after a failed or timed-out publish (or read).
    pub retries: u64,
    /// Messages skipped: repeated in the input or already in the stream.
    pub already_stored: u64,
    /// Items rejected (with `--skip-invalid`).
    pub rejected: u64,
}

/// Options of a publication.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// The subject and stream prefix.
    pub prefix: String,
    /// Partitions of the stream if it is created here.
    pub partitions: u32,
    /// Replicas if it is created here (default: 3 on a cluster, else 1).
    pub replicas: Option<usize>,
    /// How long a failed publish is retried before the publication stops
    /// with its error ([`DEFAULT_PUBLISH_TIMEOUT`] by default).
    pub publish_timeout: Duration,
}

/// Validates a source and publishes its messages; returns once every
/// published message is acknowledged.
pub fn publish(
    connection: &Connection,
    source: &dyn Source,
    options: &PublishOptions,
    on_invalid: OnInvalid<'_>,
    progress: &mut dyn FnMut(&IngestStats),
) -> Result<PublishReport, Box<IngestError>> {
    let subjects = Subjects::new(&options.prefix).map_err(boxed)?;
    let replicas = options
        .replicas
        .unwrap_or(if connection.clustered() { 3 } else { 1 });
    let (stream, partitions) = connection
        .raw_stream(&subjects, options.partitions, replicas)
        .map_err(boxed)?;
    let replicas = stream.cached_info().config.num_replicas;
    let mut sink = JetStreamSink::new(connection, stream, subjects, partitions, options);
    strataflow_pipeline::ingest::ingest_into(&mut sink, source, on_invalid, progress)
        .map_err(Box::new)?;
    while sink.settle_one().map_err(boxed)? {}
    let mut report = sink.report;
    report.retries = sink.retries;
    report.stream = sink.subjects.stream();
    report.partitions = partitions;
    report.replicas = replicas;
    report.already_stored = sink.counters.already_stored;
    report.rejected = sink.counters.rejected;
    Ok(report)
}

/// One message of [`publish_messages`]: its record id, and whether this
/// call put it in the stream (false: the stream held it already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedMessage {
    /// The Message record's id (its `Nats-Msg-Id`).
    pub id: strataflow_log::Digest,
    /// False when the stream held the same message before.
    pub new: bool,
}

/// A message of [`publish_messages`] refused: it conflicts with the stream
/// or with an earlier message of the same call.
#[derive(Debug)]
pub struct Refused {
    /// Its index in the call.
    pub index: usize,
    /// What is wrong (the field is `id`).
    pub error: InputError,
}

/// Publishes messages already validated (one request of a clustered
/// server), all or nothing on a conflict: every message is checked against
/// its thread in the stream, and against the call's earlier messages,
/// before any is sent. Returns once each is acknowledged (stored with its
/// replicas), with its record id.
pub fn publish_messages(
    connection: &Connection,
    inputs: Vec<MessageInput>,
    options: &PublishOptions,
) -> Result<Result<Vec<PublishedMessage>, Refused>, ClusterError> {
    let subjects = Subjects::new(&options.prefix)?;
    let replicas = options
        .replicas
        .unwrap_or(if connection.clustered() { 3 } else { 1 });
    let (stream, partitions) = connection.raw_stream(&subjects, options.partitions, replicas)?;
    let mut sink = JetStreamSink::new(connection, stream, subjects, partitions, options);
    let mut earlier: HashMap<(&str, &str, &str), (usize, &MessageInput)> = HashMap::new();
    for (index, input) in inputs.iter().enumerate() {
        let refused = |error| Ok(Err(Refused { index, error }));
        match sink.known(input) {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return refused(error),
            Err(e) => return Err(cluster_error(e)),
        }
        let key = (
            input.tenant.as_str(),
            input.thread.as_str(),
            input.external_id.as_str(),
        );
        if let Some(&(first, before)) = earlier.get(&key) {
            if !input.same_content_as(&before.to_message(0)) {
                return refused(InputError::field(
                    &input.location,
                    "id",
                    format!(
                        "`{}` is message {first} of this request too, with different content",
                        input.external_id
                    ),
                ));
            }
        } else {
            earlier.insert(key, (index, input));
        }
    }
    let mut published = Vec::with_capacity(inputs.len());
    for input in inputs {
        let log = sink.thread(&input)?;
        let stored = log.by_external_id.get(&input.external_id).cloned();
        let message = match stored {
            Some(m) => (m, false),
            None => (input.to_message(log.next_position), true),
        };
        let (id, _) = encode_with_id(&Record::Message(message.0))
            .map_err(|e| ClusterError::js("encode", e))?;
        sink.accept(input).map_err(cluster_error)?;
        published.push(PublishedMessage { id, new: message.1 });
    }
    while sink.settle_one()? {}
    Ok(Ok(published))
}

/// The cluster error of a sink call (every error [`JetStreamSink`] makes is
/// one).
fn cluster_error(e: IngestError) -> ClusterError {
    match e {
        IngestError::Sink(inner) => match inner.downcast::<ClusterError>() {
            Ok(e) => *e,
            Err(other) => ClusterError::js("publish", other),
        },
        other => ClusterError::js("publish", other),
    }
}

fn sink_error(e: ClusterError) -> IngestError {
    IngestError::Sink(Box::new(e))
}

fn boxed(e: ClusterError) -> Box<IngestError> {
    Box::new(sink_error(e))
}

/// What the stream holds of one thread.
#[derive(Default)]
struct ThreadLog {
    next_position: u64,
    by_external_id: HashMap<String, Message>,
    /// Whether a publish of this thread awaits its ack.
    in_flight: bool,
    /// Its next messages, held until that ack arrives.
    waiting: VecDeque<Outgoing>,
}

/// A message to publish: what it takes to send it (again).
struct Outgoing {
    subject: String,
    id: String,
    payload: Vec<u8>,
    /// Where the input holds it (for the error of a publish given up).
    location: Location,
}

/// A publish awaiting its ack.
struct Pending {
    thread: (String, String),
    out: Outgoing,
    ack: Result<PublishAckFuture, PublishError>,
}

struct JetStreamSink<'c> {
    connection: &'c Connection,
    stream: jetstream::stream::Stream,
    subjects: Subjects,
    partitions: u32,
    threads: HashMap<(String, String), ThreadLog>,
    pending: VecDeque<Pending>,
    /// Messages held behind their thread's unacknowledged publish.
    held: usize,
    publish_timeout: Duration,
    retries: u64,
    counters: IngestStats,
    report: PublishReport,
}

/// Whether an error of a publish may pass when it is sent again.
pub(crate) fn transient(e: &PublishError) -> bool {
    !matches!(e.kind(), PublishErrorKind::MaxPayloadExceeded)
}

impl<'c> JetStreamSink<'c> {
    fn new(
        connection: &'c Connection,
        stream: jetstream::stream::Stream,
        subjects: Subjects,
        partitions: u32,
        options: &PublishOptions,
    ) -> Self {
        Self {
            connection,
            stream,
            subjects,
            partitions,
            threads: HashMap::new(),
            pending: VecDeque::new(),
            held: 0,
            publish_timeout: options.publish_timeout,
            retries: 0,
            counters: IngestStats::default(),
            report: PublishReport::default(),
        }
    }

    /// The stream's messages of a thread, read once per run.
    fn thread(&mut self, input: &MessageInput) -> Result<&mut ThreadLog, ClusterError> {
        let key = (input.tenant.clone(), input.thread.clone());
        if !self.threads.contains_key(&key) {
            let log = self.read_thread(input)?;
            self.threads.insert(key.clone(), log);
        }
        // default: never taken, inserted above.
        Ok(self.threads.entry(key).or_default())
    }

    /// Reads a thread back (for its first message, `input`), each request
    /// bounded by [`ATTEMPT_TIMEOUT`] and retried until the publish timeout.
    fn read_thread(&mut self, input: &MessageInput) -> Result<ThreadLog, ClusterError> {
        let subject = self
            .subjects
            .thread(self.partitions, &input.tenant, &input.thread);
        let mut log = ThreadLog::default();
        let mut sequence = 1u64;
        let mut failing: Option<(Instant, Duration)> = None;
        loop {
            let got = self.bounded(
                self.stream
                    .raw_message_builder()
                    .sequence(sequence)
                    .next_by_subject(subject.clone())
                    .send(),
            );
            let message = match got {
                Some(Ok(m)) => m,
                Some(Err(e))
                    if e.kind()
                        == async_nats::jetstream::stream::RawMessageErrorKind::NoMessageFound =>
                {
                    break;
                }
                failed => {
                    // A server killed, stopped or a leader election: ask
                    // again.
                    let (since, backoff) = failing.get_or_insert((Instant::now(), FIRST_BACKOFF));
                    if since.elapsed() >= self.publish_timeout {
                        let detail = match failed {
                            Some(Err(e)) => e.to_string(),
                            _ => format!("no answer within {:?}", self.attempt_timeout()),
                        };
                        return Err(ClusterError::js(
                            format!(
                                "read of thread `{}` of tenant `{}` ({subject}) for message {} (retried for {:?})",
                                input.thread,
                                input.tenant,
                                input.location,
                                since.elapsed()
                            ),
                            detail,
                        ));
                    }
                    self.pause(*backoff);
                    *backoff = (*backoff * 2).min(MAX_BACKOFF);
                    self.retries += 1;
                    continue;
                }
            };
            failing = None;
            let m = message_of(&self.subjects.stream(), &message)?;
            log.next_position = log.next_position.max(m.position + 1);
            log.by_external_id.insert(m.external_id.clone(), m);
            sequence = message.sequence + 1;
        }
        Ok(log)
    }

    /// The bound of one attempt: [`ATTEMPT_TIMEOUT`], or the publish
    /// timeout if shorter (at least a second).
    fn attempt_timeout(&self) -> Duration {
        ATTEMPT_TIMEOUT.min(self.publish_timeout.max(Duration::from_secs(1)))
    }

    /// Runs one attempt on the client's runtime, bounded by
    /// [`Self::attempt_timeout`]; `None` when it did not finish in time.
    fn bounded<F: Future>(&self, attempt: F) -> Option<F::Output> {
        self.connection
            .runtime
            // The timer is made inside the runtime (it needs its clock).
            .block_on(async { tokio::time::timeout(self.attempt_timeout(), attempt).await })
            .ok()
    }

    /// Sends one attempt of a publish, bounded (a send that does not finish
    /// in time is a timed-out publish, retried like any other).
    fn send_attempt(&self, out: &Outgoing) -> Result<PublishAckFuture, PublishError> {
        let publish = jetstream::message::PublishMessage::build()
            .payload(out.payload.clone().into())
            .message_id(out.id.clone());
        self.bounded(
            self.connection
                .context
                .send_publish(out.subject.clone(), publish),
        )
        .unwrap_or_else(|| Err(PublishError::new(PublishErrorKind::TimedOut)))
    }

    /// Waits on the client's runtime, which meanwhile keeps reconnecting.
    fn pause(&self, wait: Duration) {
        // The sleep is made inside the runtime (it needs its timer).
        self.connection
            .runtime
            .block_on(async { tokio::time::sleep(wait).await });
    }

    /// Awaits the oldest publish ack; false when none is pending.
    fn settle_one(&mut self) -> Result<bool, ClusterError> {
        let Some(pending) = self.pending.pop_front() else {
            return Ok(false);
        };
        self.settle(pending)?;
        Ok(true)
    }

    /// Sends a message (a failure to send is retried when its ack is
    /// awaited).
    fn send(&mut self, thread: (String, String), out: Outgoing) {
        let ack = self.send_attempt(&out);
        self.pending.push_back(Pending { thread, out, ack });
    }

    /// Awaits one publish's ack, sending it again (same message, same
    /// `Nats-Msg-Id`) after a failure, with backoff, until the publish
    /// timeout has passed since the first failure.
    fn settle(&mut self, mut pending: Pending) -> Result<(), ClusterError> {
        let mut failing: Option<(Instant, Duration)> = None;
        let ack = loop {
            let got = match pending.ack {
                Ok(ack) => self
                    .bounded(ack.into_future())
                    .unwrap_or_else(|| Err(PublishError::new(PublishErrorKind::TimedOut))),
                Err(e) => Err(e),
            };
            let e = match got {
                Ok(ack) => break ack,
                Err(e) => e,
            };
            let (since, backoff) = failing.get_or_insert((Instant::now(), FIRST_BACKOFF));
            if !transient(&e) || since.elapsed() >= self.publish_timeout {
                return Err(ClusterError::js(
                    format!(
                        "publish of message {} of thread `{}` of tenant `{}` to {} (message id {}, retried for {:?})",
                        pending.out.location,
                        pending.thread.1,
                        pending.thread.0,
                        pending.out.subject,
                        pending.out.id,
                        since.elapsed()
                    ),
                    e,
                ));
            }
            self.pause(*backoff);
            *backoff = (*backoff * 2).min(MAX_BACKOFF);
            self.retries += 1;
            pending.ack = self.send_attempt(&pending.out);
        };
        // A duplicate on a later attempt is this run's own earlier attempt,
        // stored although its ack was lost.
        if ack.duplicate && failing.is_none() {
            self.report.duplicates += 1;
        } else {
            self.report.published += 1;
        }
        // The thread's next message, if one is held, goes now.
        let next = self.threads.get_mut(&pending.thread).and_then(|log| {
            let next = log.waiting.pop_front();
            log.in_flight = next.is_some();
            next
        });
        if let Some(out) = next {
            self.held -= 1;
            self.send(pending.thread, out);
        }
        Ok(())
    }
}

impl LogSink for JetStreamSink<'_> {
    fn known(&mut self, input: &MessageInput) -> Result<Result<Known, InputError>, IngestError> {
        let log = self.thread(input).map_err(sink_error)?;
        Ok(match log.by_external_id.get(&input.external_id) {
            None => Ok(Known::New),
            Some(m) if input.same_content_as(m) => Ok(Known::Same),
            Some(m) => Err(InputError::field(
                &input.location,
                "id",
                format!(
                    "`{}` is already in the stream in thread `{}` with different content (position {})",
                    input.external_id, input.thread, m.position
                ),
            )),
        })
    }

    fn accept(&mut self, input: MessageInput) -> Result<(), IngestError> {
        let subject = self
            .subjects
            .thread(self.partitions, &input.tenant, &input.thread);
        let log = self.thread(&input).map_err(sink_error)?;
        if log.by_external_id.contains_key(&input.external_id) {
            self.counters.already_stored += 1;
            return Ok(());
        }
        let message = input.to_message(log.next_position);
        log.next_position += 1;
        let (id, payload) = encode_with_id(&Record::Message(message.clone()))
            .map_err(|e| IngestError::Sink(Box::new(e)))?;
        log.by_external_id
            .insert(message.external_id.clone(), message);
        let out = Outgoing {
            subject,
            id: id.to_string(),
            payload,
            location: input.location.clone(),
        };
        if log.in_flight {
            // One unacknowledged publish per thread: this message waits
            // until the previous one of its thread is stored.
            log.waiting.push_back(out);
            self.held += 1;
        } else {
            log.in_flight = true;
            self.send((input.tenant.clone(), input.thread.clone()), out);
        }
        // A held message always has its thread's publish pending, so the
        // loop ends; it also stops if nothing is pending (never waiting on
        // nothing).
        while self.pending.len() >= IN_FLIGHT || self.held >= MAX_HELD {
            if !self.settle_one().map_err(sink_error)? {
                break;
            }
        }
        Ok(())
    }

    fn counters(&mut self) -> &mut IngestStats {
        &mut self.counters
    }
}

/// Decodes a stream message into its Message record.
pub(crate) fn message_of(
    stream: &str,
    message: &async_nats::jetstream::message::StreamMessage,
) -> Result<Message, ClusterError> {
    decode_message(stream, message.sequence, &message.subject, &message.payload)
}

/// Decodes a payload into a Message record, naming the stream position.
pub(crate) fn decode_message(
    stream: &str,
    sequence: u64,
    subject: &str,
    payload: &[u8],
) -> Result<Message, ClusterError> {
    let bad = |detail: String| ClusterError::BadMessage {
        stream: stream.to_owned(),
        sequence,
        subject: subject.to_owned(),
        detail,
    };
    match decode(payload) {
        Ok(Record::Message(m)) => Ok(m),
        Ok(other) => Err(bad(format!(
            "a {} record, not a message",
            other.kind().name()
        ))),
        Err(e) => Err(bad(e.to_string())),
    }
}
