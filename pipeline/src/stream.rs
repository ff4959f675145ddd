//! The streaming ingester: an async handle for an agent that appends
//! messages as they happen.
//!
//! [`Ingester::append`] queues a message and resolves with its record id
//! once the message is durable (fsynced by default). The queue is bounded:
//! when it is full, `append` waits — memory does not grow with a producer
//! that outruns the disk. One background thread takes what is queued as a
//! group, assigns positions, seals blocks, derives every sealed block with
//! the operators (as the backfill runtime does, so the log order is a
//! function of the input order alone, never of timing), and commits the
//! group as one batch. [`Ingester::flush`] waits until everything queued
//! before it is durable and derived; [`Ingester::close`] does the same and
//! stops the thread.
//!
//! The handle works on any tokio runtime (it uses only `tokio::sync`); the
//! thread is a plain OS thread, so storage never blocks the runtime.

use std::collections::HashMap;
use std::sync::Arc;

use strataflow_log::record::{Record, RecordKind};
use strataflow_log::{Durability, RecordId, Store, StoreError};
use strataflow_operators::profile::Operators;
use strataflow_operators::sealer::Sealer;
use tokio::sync::{mpsc, oneshot};

use crate::ingest_report::IngestStats;
use crate::source::jsonl::parse_line;
use crate::source::{InputError, MessageInput};
use crate::thread::ThreadState;

/// Default queue capacity (messages).
pub const DEFAULT_QUEUE: usize = 1024;

/// Error of the streaming ingester.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The message is invalid (nothing was queued).
    #[error(transparent)]
    Input(#[from] InputError),
    /// The log refused or failed; the group holding the message was not
    /// stored.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The message conflicts with a stored one (same id, other content).
    #[error(
        "message `{external_id}` of thread `{thread}` is already stored with different content (record {existing})"
    )]
    Conflict {
        /// Tenant.
        tenant: String,
        /// Thread.
        thread: String,
        /// The message's external id.
        external_id: String,
        /// The stored message with that id.
        existing: RecordId,
    },
    /// Storing the group that held the message failed; nothing of it was
    /// stored and it may be appended again. Every message of the group gets
    /// the same cause.
    #[error("storing failed: {0}")]
    Failed(#[source] Arc<crate::stage::StageError>),
    /// The ingester was closed or its thread stopped.
    #[error("the ingester is closed")]
    Closed,
    /// A batch holds the same message id twice with different content.
    #[error(
        "message `{external_id}` of thread `{thread}` is in the batch twice with different content (first at index {first})"
    )]
    Twice {
        /// Thread.
        thread: String,
        /// The message's external id.
        external_id: String,
        /// Index of its first occurrence.
        first: usize,
    },
    /// A message of a batch was refused: nothing of the batch was stored.
    #[error("message {index} of the batch: {source}")]
    InBatch {
        /// 0-based index of the refused message in the batch.
        index: usize,
        /// Why it was refused.
        #[source]
        source: Box<StreamError>,
    },
}

/// Why the background thread did not store a message.
enum Refusal {
    Twice {
        thread: String,
        external_id: String,
        first: usize,
    },
    Conflict {
        tenant: String,
        thread: String,
        external_id: String,
        existing: RecordId,
    },
    Failed(Arc<crate::stage::StageError>),
}

impl Refusal {
    fn into_error(self) -> StreamError {
        match self {
            Self::Conflict {
                tenant,
                thread,
                external_id,
                existing,
            } => StreamError::Conflict {
                tenant,
                thread,
                external_id,
                existing,
            },
            Self::Failed(cause) => StreamError::Failed(cause),
            Self::Twice {
                thread,
                external_id,
                first,
            } => StreamError::Twice {
                thread,
                external_id,
                first,
            },
        }
    }
}

/// Settings of a streaming ingester.
#[derive(Clone)]
pub struct StreamOptions {
    /// Messages the queue holds before `append` waits.
    pub queue: usize,
    /// Durability of each group.
    pub durability: Durability,
    /// Sealer of the data directory.
    pub sealer: Sealer,
    /// Operators deriving each block as it seals (`None`: messages and
    /// blocks only).
    pub operators: Option<Operators>,
}

/// A message made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acked {
    /// The message's record id.
    pub id: RecordId,
    /// False when the same message was stored before (nothing written).
    pub new: bool,
}

type Reply = oneshot::Sender<Result<Acked, Refusal>>;

/// The answer to a batch: every message acknowledged, or the first one
/// refused (with its index) and nothing of the batch stored.
type BatchReply = oneshot::Sender<Result<Vec<Acked>, (usize, Refusal)>>;

enum Command {
    Append(Box<MessageInput>, Reply),
    AppendBatch(Vec<MessageInput>, BatchReply),
    Flush(oneshot::Sender<IngestStats>),
}

/// What one command appends: a message, or a batch stored all or nothing.
enum Unit {
    One(Box<MessageInput>, Reply),
    Batch(Vec<MessageInput>, BatchReply),
}

impl Unit {
    fn inputs(&self) -> &[MessageInput] {
        match self {
            Self::One(input, _) => std::slice::from_ref(input.as_ref()),
            Self::Batch(inputs, _) => inputs,
        }
    }
}

/// The async handle. Cloning is not offered: share it behind an `Arc`.
pub struct Ingester {
    commands: mpsc::Sender<Command>,
    capacity: usize,
    received: std::sync::atomic::AtomicU64,
}

impl Ingester {
    /// Starts the background thread.
    pub fn start(store: Arc<Store>, options: StreamOptions) -> Result<Self, StreamError> {
        let capacity = options.queue.max(1);
        let (tx, rx) = mpsc::channel(capacity);
        std::thread::Builder::new()
            .name("strataflow-stream".into())
            .spawn(move || background(&store, &options, rx))
            .map_err(|_| StreamError::Closed)?;
        Ok(Self {
            commands: tx,
            capacity,
            received: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Appends a message; resolves once it is durable. Waits while the
    /// queue is full.
    pub async fn append(&self, message: MessageInput) -> Result<Acked, StreamError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::Append(Box::new(message), tx))
            .await
            .map_err(|_| StreamError::Closed)?;
        rx.await
            .map_err(|_| StreamError::Closed)?
            .map_err(Refusal::into_error)
    }

    /// Appends messages as one unit: resolves once all are durable, or
    /// refuses them all when one conflicts with a stored message (or with
    /// another of the batch), naming its index; nothing of a refused batch
    /// is stored. The batch takes one place in the queue and is stored in
    /// one group, in its order.
    pub async fn append_batch(
        &self,
        messages: Vec<MessageInput>,
    ) -> Result<Vec<Acked>, StreamError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::AppendBatch(messages, tx))
            .await
            .map_err(|_| StreamError::Closed)?;
        rx.await
            .map_err(|_| StreamError::Closed)?
            .map_err(|(index, refusal)| StreamError::InBatch {
                index,
                source: Box::new(refusal.into_error()),
            })
    }

    /// Parses one JSON message in the JSONL input format (`docs/format.md`)
    /// and appends it. A bad message is refused before it is queued, with
    /// the field at fault.
    pub async fn append_json(&self, json: &str) -> Result<Acked, StreamError> {
        let n = self
            .received
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let input = parse_line("stream", usize::try_from(n).unwrap_or(usize::MAX), json)?;
        self.append(input).await
    }

    /// Waits until every message queued before this call is durable and
    /// its blocks derived; returns the totals so far.
    pub async fn flush(&self) -> Result<IngestStats, StreamError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::Flush(tx))
            .await
            .map_err(|_| StreamError::Closed)?;
        rx.await.map_err(|_| StreamError::Closed)
    }

    /// Flushes and stops the background thread.
    pub async fn close(self) -> Result<IngestStats, StreamError> {
        let stats = self.flush().await?;
        drop(self.commands);
        Ok(stats)
    }

    /// Messages waiting in the queue (at most the capacity).
    pub fn queued(&self) -> usize {
        self.capacity - self.commands.capacity()
    }

    /// The queue's capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// What the background thread keeps between groups.
struct Background<'a> {
    store: &'a Store,
    options: &'a StreamOptions,
    threads: HashMap<(String, String), ThreadState>,
    stats: IngestStats,
}

fn background(store: &Store, options: &StreamOptions, mut commands: mpsc::Receiver<Command>) {
    let mut state = Background {
        store,
        options,
        threads: HashMap::new(),
        stats: IngestStats {
            stage: "stream",
            ..IngestStats::default()
        },
    };
    let limit = options.queue.max(1);
    while let Some(first) = commands.blocking_recv() {
        let mut group = vec![first];
        while group.len() < limit {
            match commands.try_recv() {
                Ok(c) => group.push(c),
                Err(_) => break,
            }
        }
        let mut appends = Vec::new();
        for command in group {
            match command {
                Command::Append(input, reply) => appends.push(Unit::One(input, reply)),
                Command::AppendBatch(inputs, reply) => appends.push(Unit::Batch(inputs, reply)),
                Command::Flush(reply) => {
                    state.commit(std::mem::take(&mut appends));
                    // The caller may have stopped waiting.
                    let _ = reply.send(state.stats);
                }
            }
        }
        state.commit(appends);
    }
}

impl Background<'_> {
    /// Stores one group and answers each of its units.
    fn commit(&mut self, units: Vec<Unit>) {
        if units.is_empty() {
            return;
        }
        match self.prepare_and_append(&units) {
            Ok(outcomes) => {
                for (unit, outcome) in units.into_iter().zip(outcomes) {
                    match unit {
                        Unit::One(_, reply) => {
                            #[expect(
                                clippy::expect_used,
                                reason = "a unit of one message has exactly one ack"
                            )]
                            let answer = outcome
                                .map(|mut acks| acks.pop().expect("one ack"))
                                .map_err(|(_, refusal)| refusal);
                            let _ = reply.send(answer);
                        }
                        Unit::Batch(_, reply) => {
                            let _ = reply.send(outcome);
                        }
                    }
                }
            }
            Err(e) => {
                // Nothing of the group is stored; threads reload from the
                // log on the next group.
                self.threads.clear();
                let cause = Arc::new(e);
                for unit in units {
                    let refusal = Refusal::Failed(Arc::clone(&cause));
                    match unit {
                        Unit::One(_, reply) => {
                            let _ = reply.send(Err(refusal));
                        }
                        Unit::Batch(_, reply) => {
                            let _ = reply.send(Err((0, refusal)));
                        }
                    }
                }
            }
        }
    }

    /// The message stored under `input`'s key, and whether it has the
    /// same content.
    fn stored(
        &self,
        input: &MessageInput,
    ) -> Result<Option<(RecordId, bool)>, crate::stage::StageError> {
        let Some(id) =
            self.store
                .message_by_external_id(&input.tenant, &input.thread, &input.external_id)?
        else {
            return Ok(None);
        };
        let same = matches!(
            self.store.get(&id)?.map(|s| s.record),
            Some(Record::Message(m)) if input.same_content_as(&m)
        );
        Ok(Some((id, same)))
    }

    /// Prepares every unit of the group and appends what they produce as
    /// one batch. A unit whose message conflicts (with a stored message, or
    /// with an earlier message of the group) is refused whole before any of
    /// its messages enters a thread.
    #[expect(
        clippy::type_complexity,
        reason = "one outcome per unit: its acks, or the refused index and why"
    )]
    fn prepare_and_append(
        &mut self,
        units: &[Unit],
    ) -> Result<Vec<Result<Vec<Acked>, (usize, Refusal)>>, crate::stage::StageError> {
        let ops = self.options.operators.as_ref();
        let mut records = Vec::new();
        let mut outcomes = Vec::with_capacity(units.len());
        // Messages of this group so far, by key: their id and input.
        let mut group: HashMap<(String, String, String), (RecordId, MessageInput)> = HashMap::new();
        for unit in units {
            let inputs = unit.inputs();
            self.stats.read += inputs.len() as u64;
            // First pass: refuse the unit if any message conflicts.
            let mut earlier: Vec<Option<(RecordId, bool)>> = Vec::with_capacity(inputs.len());
            let mut refused = None;
            // Key → (index of its first message in the unit, what that one found).
            let mut in_unit: HashMap<(&str, &str, &str), (usize, Option<(RecordId, bool)>)> =
                HashMap::new();
            for (index, input) in inputs.iter().enumerate() {
                let unit_key = (
                    input.tenant.as_str(),
                    input.thread.as_str(),
                    input.external_id.as_str(),
                );
                if let Some(&(first, first_known)) = in_unit.get(&unit_key) {
                    if inputs.get(first) != Some(input) {
                        refused = Some((
                            index,
                            Refusal::Twice {
                                thread: input.thread.clone(),
                                external_id: input.external_id.clone(),
                                first,
                            },
                        ));
                        break;
                    }
                    // The same message twice: acknowledged as the first is.
                    earlier.push(first_known);
                    continue;
                }
                let key = (
                    input.tenant.clone(),
                    input.thread.clone(),
                    input.external_id.clone(),
                );
                let known = match group.get(&key) {
                    Some((id, first)) => Some((*id, first == input)),
                    None => self.stored(input)?,
                };
                if let Some((existing, false)) = known {
                    refused = Some((
                        index,
                        Refusal::Conflict {
                            tenant: input.tenant.clone(),
                            thread: input.thread.clone(),
                            external_id: input.external_id.clone(),
                            existing,
                        },
                    ));
                    break;
                }
                in_unit.insert(unit_key, (index, known));
                earlier.push(known);
            }
            if let Some(refusal) = refused {
                outcomes.push(Err(refusal));
                continue;
            }
            // Second pass: every message enters its thread (or is
            // acknowledged as stored before).
            let mut acks = Vec::with_capacity(inputs.len());
            for (input, known) in inputs.iter().zip(earlier) {
                let key = (
                    input.tenant.clone(),
                    input.thread.clone(),
                    input.external_id.clone(),
                );
                if let Some((id, _)) = group.get(&key) {
                    acks.push(Acked {
                        id: *id,
                        new: false,
                    });
                    self.stats.already_stored += 1;
                    continue;
                }
                if let Some((id, _)) = known {
                    acks.push(Acked { id, new: false });
                    self.stats.already_stored += 1;
                    continue;
                }
                let thread = (input.tenant.clone(), input.thread.clone());
                if !self.threads.contains_key(&thread) {
                    let mut loaded =
                        ThreadState::load(self.store, &input.tenant, &input.thread, ops)?;
                    records.extend(loaded.seal_loaded(&self.options.sealer, ops)?.records);
                    self.threads.insert(thread.clone(), loaded);
                }
                #[expect(clippy::expect_used, reason = "the thread was inserted just above")]
                let state = self.threads.get_mut(&thread).expect("thread state loaded");
                let produced = state.push(self.store, input.clone(), &self.options.sealer, ops)?;
                self.stats.failed_runs += produced.failed_runs;
                #[expect(
                    clippy::expect_used,
                    reason = "no message is stored under this key (looked up above) and this thread is the directory's only writer, so push makes its record"
                )]
                let id = produced
                    .records
                    .first()
                    .map(|r| r.id())
                    .expect("a new message's record");
                group.insert(key, (id, input.clone()));
                records.extend(produced.records);
                acks.push(Acked { id, new: true });
            }
            outcomes.push(Ok(acks));
        }
        if !records.is_empty() {
            let receipt = self
                .store
                .append_encoded(&records, self.options.durability)?;
            for (record, appended) in records.iter().zip(&receipt.records) {
                if appended.new {
                    match record.record().kind() {
                        RecordKind::Message => self.stats.stored += 1,
                        RecordKind::Block => self.stats.blocks_sealed += 1,
                        RecordKind::BlockSummary => self.stats.summaries += 1,
                        RecordKind::Event => self.stats.events += 1,
                        RecordKind::GraphAssertion => self.stats.assertions += 1,
                        _ => {}
                    }
                }
            }
            self.stats.batches += 1;
        }
        Ok(outcomes)
    }
}
