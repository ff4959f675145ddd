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

use std::collections::{HashMap, VecDeque};

use async_nats::jetstream::{self, context::PublishAckFuture};
use strataflow_log::envelope::{decode, encode_with_id};
use strataflow_log::record::{Message, Record};
use strataflow_pipeline::ingest::{IngestError, IngestStats, OnInvalid, Source};
use strataflow_pipeline::log_seam::{Known, LogSink};
use strataflow_pipeline::source::{InputError, MessageInput};

use crate::{ClusterError, Connection, Subjects};

/// Publish acks awaited at most this many at once.
const IN_FLIGHT: usize = 512;

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
    /// Messages JetStream dropped as duplicates (same id in its window).
    pub duplicates: u64,
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
    let mut sink = JetStreamSink {
        connection,
        stream,
        subjects,
        partitions,
        threads: HashMap::new(),
        pending: VecDeque::new(),
        counters: IngestStats::default(),
        report: PublishReport::default(),
    };
    strataflow_pipeline::ingest::ingest_into(&mut sink, source, on_invalid, progress)
        .map_err(Box::new)?;
    while sink.settle_one().map_err(boxed)? {}
    let mut report = sink.report;
    report.stream = sink.subjects.stream();
    report.partitions = partitions;
    report.replicas = replicas;
    report.already_stored = sink.counters.already_stored;
    report.rejected = sink.counters.rejected;
    Ok(report)
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
}

struct JetStreamSink<'c> {
    connection: &'c Connection,
    stream: jetstream::stream::Stream,
    subjects: Subjects,
    partitions: u32,
    threads: HashMap<(String, String), ThreadLog>,
    pending: VecDeque<PublishAckFuture>,
    counters: IngestStats,
    report: PublishReport,
}

impl JetStreamSink<'_> {
    /// The stream's messages of a thread, read once per run.
    fn thread(&mut self, tenant: &str, thread: &str) -> Result<&mut ThreadLog, ClusterError> {
        let key = (tenant.to_owned(), thread.to_owned());
        if !self.threads.contains_key(&key) {
            let log = self.read_thread(tenant, thread)?;
            self.threads.insert(key.clone(), log);
        }
        // default: never taken, inserted above.
        Ok(self.threads.entry(key).or_default())
    }

    fn read_thread(&self, tenant: &str, thread: &str) -> Result<ThreadLog, ClusterError> {
        let subject = self.subjects.thread(self.partitions, tenant, thread);
        let mut log = ThreadLog::default();
        let mut sequence = 1u64;
        loop {
            let got = self.connection.runtime.block_on(
                self.stream
                    .raw_message_builder()
                    .sequence(sequence)
                    .next_by_subject(subject.clone())
                    .send(),
            );
            let message = match got {
                Ok(m) => m,
                Err(e)
                    if e.kind()
                        == async_nats::jetstream::stream::RawMessageErrorKind::NoMessageFound =>
                {
                    break;
                }
                Err(e) => return Err(ClusterError::js(format!("read {subject}"), e)),
            };
            let m = message_of(&self.subjects.stream(), &message)?;
            log.next_position = log.next_position.max(m.position + 1);
            log.by_external_id.insert(m.external_id.clone(), m);
            sequence = message.sequence + 1;
        }
        Ok(log)
    }

    /// Awaits the oldest publish ack; false when none is pending.
    fn settle_one(&mut self) -> Result<bool, ClusterError> {
        let Some(ack) = self.pending.pop_front() else {
            return Ok(false);
        };
        let ack = self
            .connection
            .runtime
            .block_on(ack.into_future())
            .map_err(|e| ClusterError::js("publish ack", e))?;
        if ack.duplicate {
            self.report.duplicates += 1;
        } else {
            self.report.published += 1;
        }
        Ok(true)
    }
}

impl LogSink for JetStreamSink<'_> {
    fn known(&mut self, input: &MessageInput) -> Result<Result<Known, InputError>, IngestError> {
        let log = self
            .thread(&input.tenant, &input.thread)
            .map_err(sink_error)?;
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
        let log = self
            .thread(&input.tenant, &input.thread)
            .map_err(sink_error)?;
        if log.by_external_id.contains_key(&input.external_id) {
            self.counters.already_stored += 1;
            return Ok(());
        }
        let message = input.to_message(log.next_position);
        log.next_position += 1;
        let (id, bytes) = encode_with_id(&Record::Message(message.clone()))
            .map_err(|e| IngestError::Sink(Box::new(e)))?;
        log.by_external_id
            .insert(message.external_id.clone(), message);
        let publish = jetstream::message::PublishMessage::build()
            .payload(bytes.into())
            .message_id(id.to_string());
        let ack = self
            .connection
            .runtime
            .block_on(self.connection.context.send_publish(subject, publish))
            .map_err(|e| sink_error(ClusterError::js("publish", e)))?;
        self.pending.push_back(ack);
        if self.pending.len() >= IN_FLIGHT {
            self.settle_one().map_err(sink_error)?;
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
