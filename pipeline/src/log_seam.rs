//! The log seam: where validated raw messages go ([`LogSink`]) and where a
//! node reads them back from ([`LogSource`]).
//!
//! Today's local store is one implementation of each side: the runtime's
//! [`Feeder`] is the sink of `ingest` (it assigns positions, seals, derives
//! and commits into the data directory), and the store itself is the log a
//! local run reads. `strataflow-cluster` implements both on NATS JetStream
//! (a publisher, and a durable pull consumer per partition).
//!
//! A Kafka adapter would implement the same two traits: the sink produces
//! each message (the encoded Message record) to a topic keyed by tenant, so
//! that the partition is a function of the tenant and one thread's messages
//! keep their order, with an idempotent producer standing in for
//! `Nats-Msg-Id`; [`LogSink::known`] reads a thread's earlier messages back
//! (a compacted index topic, or a scan of the partition); the source is a
//! consumer group member whose [`LogSource::ack`] commits the offset after
//! the last message of a batch made durable.

use strataflow_log::RecordId;
use strataflow_log::record::Message;

use crate::ingest_report::{IngestError, IngestStats};
use crate::runtime::Feeder;
use crate::source::{InputError, MessageInput};

/// What a log already holds of a message offered to a [`LogSink`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Known {
    /// Nothing under its (tenant, thread, external id).
    New,
    /// The same message (same content) is stored: it is skipped.
    Same,
}

/// Where an ingest puts validated raw messages, in input order.
pub trait LogSink {
    /// Checks a message against what the log holds before anything is
    /// accepted (the refuse policy's first pass): an `InputError` refuses it
    /// (the same external id with other content).
    fn known(&mut self, input: &MessageInput) -> Result<Result<Known, InputError>, IngestError>;
    /// Takes the next valid message (not a repeat of the input).
    fn accept(&mut self, input: MessageInput) -> Result<(), IngestError>;
    /// The reader's counters (read, repeats, rejects), merged into reports.
    fn counters(&mut self) -> &mut IngestStats;
}

/// The local store's sink: [`Feeder::push`]. Its checks against the log
/// are those of the ingest validator, which reads the store itself.
impl LogSink for Feeder<'_> {
    fn known(&mut self, _input: &MessageInput) -> Result<Result<Known, InputError>, IngestError> {
        Ok(Ok(Known::New))
    }

    fn accept(&mut self, input: MessageInput) -> Result<(), IngestError> {
        self.push(input)
    }

    fn counters(&mut self) -> &mut IngestStats {
        &mut self.reader
    }
}

/// One raw message delivered by a [`LogSource`].
#[derive(Debug, Clone)]
pub struct Delivered<T> {
    /// The message record as the log stores it (decoded).
    pub message: Message,
    /// Its record id as published.
    pub id: RecordId,
    /// What [`LogSource::ack`] needs to acknowledge it.
    pub token: T,
}

/// Where a node reads raw messages from: each thread's messages in order,
/// at least once; a message is acknowledged only once the batch holding it
/// is durable in the node's store.
pub trait LogSource {
    /// The acknowledgement handle of one message.
    type Token;
    /// The error of the log.
    type Error: std::error::Error + Send + Sync + 'static;
    /// The next messages, up to `max`; empty when none arrived in time.
    fn next_batch(&mut self, max: usize) -> Result<Vec<Delivered<Self::Token>>, Self::Error>;
    /// Acknowledges delivered messages (after they are durable).
    fn ack(&mut self, tokens: Vec<Self::Token>) -> Result<(), Self::Error>;
}
