//! A node: owns some partitions of the raw-message stream and materialises
//! their tenants into its own data directory.
//!
//! Ownership is static in this version: the partitions are given
//! (`--partitions a,b,…`), one durable pull consumer per partition
//! (`<prefix>_l5_p<partition>`, explicit acks). A batch fetched from a
//! partition is appended through the streaming ingester (positions, seal,
//! derive; one group, fsynced) and its messages are acknowledged only
//! after that group is durable. A message delivered again after a crash is
//! found by its external id and content and skipped, so each record is
//! stored once. When a partition has nothing more for now, the persisted
//! views of the node's tenants are brought up to the end of its log.
//!
//! The node derives with its data directory's default profile; a
//! model-backed one asks the model through the model-call stream
//! ([`crate::calls`]): a request any node made is answered from there.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull};
use futures_util::StreamExt;
use strataflow::{Memory, ViewsOptions};
use strataflow_log::RecordId;
use strataflow_log::envelope::encode_with_id;
use strataflow_log::record::{Message, Record};
use strataflow_pipeline::log_seam::{Delivered, LogSource};
use strataflow_pipeline::source::{Location, MessageInput};

use crate::calls::CallStream;
use crate::publish::{ATTEMPT_TIMEOUT, DEFAULT_PUBLISH_TIMEOUT, decode_message};
use crate::retry::{Attempt, retried};
use crate::{ClusterError, Connection, Subjects};

/// How long a delivered message may wait for its acknowledgement before
/// JetStream delivers it again (a batch is stored and acknowledged well
/// within it; a redelivery while the node runs would come behind newer
/// messages of its thread).
const ACK_WAIT: Duration = Duration::from_secs(600);

/// Options of a node.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// The subject and stream prefix.
    pub prefix: String,
    /// The partitions this node owns.
    pub partitions: Vec<u32>,
    /// Messages fetched per batch.
    pub batch: usize,
    /// Stop once every owned partition has been consumed to its end (and
    /// the views refreshed) instead of waiting for more.
    pub drain: bool,
}

/// What a node did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeReport {
    /// Messages delivered.
    pub delivered: u64,
    /// Messages stored (new).
    pub stored: u64,
    /// Messages delivered again and found stored.
    pub already_stored: u64,
    /// Batches made durable and acknowledged.
    pub batches: u64,
}

/// The JetStream side of [`LogSource`]: a node's partitions, each a
/// durable pull consumer, read in turn.
///
/// Every request to JetStream (opening a consumer, a fetch, an
/// acknowledgement, a consumer's info) is bounded per attempt and tried
/// again with backoff for [`RETRY_FOR`] when it fails, so a NATS server
/// killed or a leader being elected does not stop the node. A fetch that
/// fails may have delivered messages this node never saw, which JetStream
/// would redeliver only after the ack wait, behind newer ones; so the
/// partition's consumer is opened again from its acknowledgement floor
/// first, and everything after the floor comes again in stream order.
pub struct PartitionSource<'c> {
    connection: &'c Connection,
    stream: String,
    handle: jetstream::stream::Stream,
    consumers: Vec<Partition>,
    next: usize,
    /// Partitions that answered nothing since the last message.
    idle: usize,
    /// Since when fetches fail without one succeeding.
    failing_since: Option<std::time::Instant>,
}

/// One owned partition's durable consumer.
struct Partition {
    number: u32,
    name: String,
    config: pull::Config,
    consumer: jetstream::consumer::PullConsumer,
}

/// How long a node tries a failing JetStream request again before it
/// stops with the error.
pub const RETRY_FOR: Duration = Duration::from_secs(60);

/// The largest batch a node fetches (`--batch`), and the unacknowledged
/// messages its consumers allow.
pub const MAX_BATCH: u64 = 10_000;

const MAX_ACK_PENDING: i64 = 10_000;

impl<'c> PartitionSource<'c> {
    /// Opens (or creates) the durable consumer of each partition; `fresh`
    /// (the node's data directory holds no message) starts each from the
    /// stream's first message whatever it acknowledged before.
    pub fn open(
        connection: &'c Connection,
        subjects: &Subjects,
        partitions: &[u32],
        fresh: bool,
    ) -> Result<Self, ClusterError> {
        let stream_name = subjects.stream();
        let handle = connection.runtime.block_on(retried(
            RETRY_FOR,
            format!("open stream {stream_name}"),
            || async {
                match connection.context.get_stream(&stream_name).await {
                    Ok(stream) => Attempt::Done(stream),
                    Err(e) => Attempt::Again(e.to_string()),
                }
            },
        ))?;
        let found = handle
            .cached_info()
            .config
            .metadata
            .get(crate::subject::PARTITIONS_KEY)
            .cloned();
        let count = found
            .as_deref()
            .and_then(|p| p.parse::<u32>().ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| ClusterError::Partitions {
                stream: stream_name.clone(),
                key: crate::subject::PARTITIONS_KEY,
                found,
            })?;
        let mut consumers = Vec::new();
        for &partition in partitions {
            if partition >= count {
                return Err(ClusterError::NoSuchPartition {
                    partition,
                    stream: stream_name,
                    partitions: count,
                });
            }
            let name = subjects.consumer(partition);
            let config = pull::Config {
                durable_name: Some(name.clone()),
                filter_subject: subjects.partition(partition),
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                ack_wait: ACK_WAIT,
                deliver_policy: jetstream::consumer::DeliverPolicy::All,
                // A fetch delivers at most this many unacknowledged
                // messages: room for the largest batch.
                max_ack_pending: MAX_ACK_PENDING,
                ..Default::default()
            };
            let consumer = connection
                .runtime
                .block_on(open_consumer(&handle, &name, &config, fresh))?;
            consumers.push(Partition {
                number: partition,
                name,
                config,
                consumer,
            });
        }
        Ok(Self {
            connection,
            stream: stream_name,
            handle,
            consumers,
            next: 0,
            idle: 0,
            failing_since: None,
        })
    }

    /// True once every partition answered nothing in a row.
    pub fn all_idle(&self) -> bool {
        self.idle >= self.consumers.len()
    }

    /// Messages still to deliver or acknowledge on every partition.
    pub fn outstanding(&mut self) -> Result<u64, ClusterError> {
        let mut total = 0;
        for partition in &self.consumers {
            let consumer = &partition.consumer;
            let info = self.connection.runtime.block_on(retried(
                RETRY_FOR,
                format!("info of partition {}", partition.number),
                || async {
                    match consumer.get_info().await {
                        Ok(info) => Attempt::Done(info),
                        Err(e) => Attempt::Again(e.to_string()),
                    }
                },
            ))?;
            total += info.num_pending + u64::try_from(info.num_ack_pending).unwrap_or(u64::MAX);
        }
        Ok(total)
    }
}

/// Opens (or creates) a partition's durable consumer, retried while
/// JetStream fails ([`reopen`]).
async fn open_consumer(
    stream: &jetstream::stream::Stream,
    name: &str,
    config: &pull::Config,
    fresh: bool,
) -> Result<jetstream::consumer::PullConsumer, ClusterError> {
    retried(RETRY_FOR, format!("consumer {name}"), || async {
        match reopen(stream, name, config, fresh).await {
            Ok(consumer) => Attempt::Done(consumer),
            Err(e) => Attempt::Again(e.to_string()),
        }
    })
    .await
}

/// One attempt of [`open_consumer`]. Messages delivered to an earlier
/// consumer and never acknowledged (a node killed, a fetch failed) would
/// be redelivered only after the ack wait, behind newer ones, and their
/// threads' order would break: the consumer starts again after its ack
/// floor. `fresh` (a new or deleted data directory) starts it from the
/// stream's first message, to rebuild its tenants.
async fn reopen(
    stream: &jetstream::stream::Stream,
    name: &str,
    config: &pull::Config,
    fresh: bool,
) -> Result<jetstream::consumer::PullConsumer, async_nats::Error> {
    let mut consumer = stream.get_or_create_consumer(name, config.clone()).await?;
    let info = consumer.info().await?.clone();
    if fresh && info.delivered.stream_sequence > 0 {
        stream.delete_consumer(name).await?;
        consumer = stream.create_consumer(config.clone()).await?;
    } else if info.num_ack_pending > 0 {
        stream.delete_consumer(name).await?;
        let again = pull::Config {
            deliver_policy: jetstream::consumer::DeliverPolicy::ByStartSequence {
                start_sequence: info.ack_floor.stream_sequence + 1,
            },
            ..config.clone()
        };
        consumer = stream.create_consumer(again).await?;
    }
    Ok(consumer)
}

/// One fetch of up to `max` messages (those available now), bounded.
async fn fetch(
    consumer: &jetstream::consumer::PullConsumer,
    max: usize,
) -> Result<Vec<jetstream::Message>, String> {
    let fetched = tokio::time::timeout(ATTEMPT_TIMEOUT, async {
        let mut batch = consumer
            .fetch()
            .max_messages(max.max(1))
            .messages()
            .await
            .map_err(|e| e.to_string())?;
        let mut got = Vec::new();
        while let Some(m) = batch.next().await {
            got.push(m.map_err(|e| e.to_string())?);
        }
        Ok(got)
    })
    .await;
    fetched.unwrap_or_else(|_| Err(format!("no answer within {ATTEMPT_TIMEOUT:?}")))
}

impl LogSource for PartitionSource<'_> {
    type Token = jetstream::Message;
    type Error = ClusterError;

    fn next_batch(&mut self, max: usize) -> Result<Vec<Delivered<Self::Token>>, ClusterError> {
        let n = self.consumers.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let index = self.next % n;
        self.next = self.next.wrapping_add(1);
        let Some(partition) = self.consumers.get_mut(index) else {
            return Ok(Vec::new());
        };
        // A consumer created before `max_ack_pending` was set allows the
        // server's default (1,000): a fetch of more would not end.
        let allowed = usize::try_from(partition.consumer.cached_info().config.max_ack_pending)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(usize::MAX);
        let messages = match self
            .connection
            .runtime
            .block_on(fetch(&partition.consumer, max.min(allowed)))
        {
            Ok(messages) => {
                self.failing_since = None;
                messages
            }
            Err(detail) => {
                let since = *self
                    .failing_since
                    .get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= RETRY_FOR {
                    return Err(ClusterError::js(
                        format!(
                            "fetch partition {} (failing for {:?})",
                            partition.number,
                            since.elapsed()
                        ),
                        detail,
                    ));
                }
                tracing::warn!(
                    partition = partition.number,
                    detail,
                    "fetch failed: the partition's consumer is opened again after its acknowledgement floor"
                );
                partition.consumer = self.connection.runtime.block_on(open_consumer(
                    &self.handle,
                    &partition.name,
                    &partition.config,
                    false,
                ))?;
                return Ok(Vec::new());
            }
        };
        if messages.is_empty() {
            self.idle += 1;
        } else {
            self.idle = 0;
        }
        let mut delivered = Vec::with_capacity(messages.len());
        for m in messages {
            let sequence = m.info().map(|i| i.stream_sequence).unwrap_or_default();
            let message = decode_message(&self.stream, sequence, &m.subject, &m.payload)?;
            let id = published_id(&message)?;
            delivered.push(Delivered {
                message,
                id,
                token: m,
            });
        }
        Ok(delivered)
    }

    fn ack(&mut self, tokens: Vec<Self::Token>) -> Result<(), ClusterError> {
        // A lost acknowledgement only makes JetStream deliver the message
        // again, which the node then finds stored.
        let client = &self.connection.client;
        self.connection.runtime.block_on(async {
            for m in &tokens {
                retried(RETRY_FOR, "ack".to_owned(), || async {
                    match m.ack().await {
                        Ok(()) => Attempt::Done(()),
                        Err(e) => Attempt::Again(e.to_string()),
                    }
                })
                .await?;
            }
            retried(RETRY_FOR, "flush acks".to_owned(), || async {
                match client.flush().await {
                    Ok(()) => Attempt::Done(()),
                    Err(e) => Attempt::Again(e.to_string()),
                }
            })
            .await
        })
    }
}

/// The id the record had when published (that of its envelope).
fn published_id(message: &Message) -> Result<RecordId, ClusterError> {
    encode_with_id(&Record::Message(message.clone()))
        .map(|(id, _)| id)
        .map_err(|e| ClusterError::js("encode", e))
}

/// Runs a node until interrupted (or, with [`NodeOptions::drain`], until
/// its partitions are consumed). `progress` gets the totals after every
/// batch. `memory`'s model requests go through the model-call stream for
/// the run ([`Memory::set_shared_calls`]).
pub fn run(
    connection: &Connection,
    memory: &mut Memory,
    options: &NodeOptions,
    progress: &mut dyn FnMut(&NodeReport),
) -> Result<NodeReport, ClusterError> {
    let subjects = Subjects::new(&options.prefix)?;
    share_calls(connection, memory, &options.prefix)?;
    let result = consume(connection, memory, &subjects, options, None, progress);
    // Stops sharing, which also saves the run's model call counters.
    let stopped = memory.set_shared_calls(None);
    let report = result?;
    stopped?;
    Ok(report)
}

/// Sends `memory`'s model requests through the model-call stream of
/// `prefix` from now on ([`Memory::set_shared_calls`]).
pub fn share_calls(
    connection: &Connection,
    memory: &mut Memory,
    prefix: &str,
) -> Result<(), ClusterError> {
    let subjects = Subjects::new(prefix)?;
    let calls = CallStream::open(connection.url(), &subjects, None, DEFAULT_PUBLISH_TIMEOUT)?;
    memory.set_shared_calls(Some(Arc::new(calls)))?;
    Ok(())
}

/// The node loop beside a server (`serve --nats`): consumes the partitions
/// into `memory` (whose model calls [`share_calls`] has routed already)
/// until `stop` is set, then closes its ingester.
pub fn consume_until(
    connection: &Connection,
    memory: &Memory,
    options: &NodeOptions,
    stop: &std::sync::atomic::AtomicBool,
    progress: &mut dyn FnMut(&NodeReport),
) -> Result<NodeReport, ClusterError> {
    let subjects = Subjects::new(&options.prefix)?;
    consume(connection, memory, &subjects, options, Some(stop), progress)
}

/// The node loop of [`run`] and [`consume_until`].
fn consume(
    connection: &Connection,
    memory: &Memory,
    subjects: &Subjects,
    options: &NodeOptions,
    stop: Option<&std::sync::atomic::AtomicBool>,
    progress: &mut dyn FnMut(&NodeReport),
) -> Result<NodeReport, ClusterError> {
    let fresh = memory.threads()?.is_empty();
    let mut source = PartitionSource::open(connection, subjects, &options.partitions, fresh)?;
    let ingester = memory.ingester(options.batch.max(1))?;
    let mut report = NodeReport::default();
    let mut stale_views = true;
    loop {
        if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Acquire)) {
            break;
        }
        let batch = source.next_batch(options.batch)?;
        if batch.is_empty() {
            if source.all_idle() {
                if stale_views {
                    memory.views(&memory.tenants()?, &ViewsOptions::default())?;
                    stale_views = false;
                }
                if options.drain && source.outstanding()? == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            continue;
        }
        let first = batch
            .first()
            .map(|d| sequence_of(&d.token))
            .unwrap_or_default();
        let last = batch
            .last()
            .map(|d| sequence_of(&d.token))
            .unwrap_or_default();
        let mut inputs = Vec::with_capacity(batch.len());
        let mut tokens = Vec::with_capacity(batch.len());
        let mut ids = Vec::with_capacity(batch.len());
        for d in batch {
            inputs.push(input_of(&source.stream, sequence_of(&d.token), d.message));
            ids.push(d.id);
            tokens.push(d.token);
        }
        let acked = connection
            .runtime
            .block_on(ingester.append_batch(inputs))
            .map_err(|e| ClusterError::Store {
                stream: source.stream.clone(),
                first,
                last,
                source: Box::new(e),
            })?;
        for (a, published) in acked.iter().zip(&ids) {
            if a.new {
                report.stored += 1;
            } else {
                report.already_stored += 1;
            }
            if a.id != *published {
                tracing::warn!(
                    stored = %a.id,
                    %published,
                    "a message was stored under another id than it was published with (its thread's positions differ)"
                );
            }
        }
        report.delivered += tokens.len() as u64;
        source.ack(tokens)?;
        report.batches += 1;
        stale_views = true;
        progress(&report);
    }
    connection
        .runtime
        .block_on(ingester.close())
        .map_err(|e| ClusterError::Store {
            stream: source.stream.clone(),
            first: 0,
            last: 0,
            source: Box::new(e),
        })?;
    Ok(report)
}

fn sequence_of(m: &jetstream::Message) -> u64 {
    m.info().map(|i| i.stream_sequence).unwrap_or_default()
}

/// A delivered Message record as ingest input (its position is assigned
/// again by the ingester, from the node's thread head).
fn input_of(stream: &str, sequence: u64, m: Message) -> MessageInput {
    MessageInput {
        location: Location {
            file: format!("nats:{stream}"),
            line: usize::try_from(sequence).ok(),
            path: None,
        },
        tenant: m.tenant,
        thread: m.thread,
        external_id: m.external_id,
        role: m.role,
        speaker: m.speaker,
        content: m.content,
        tool_calls: m.tool_calls,
        time: m.time,
    }
}
