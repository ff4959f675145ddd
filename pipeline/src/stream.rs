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
}

/// Why the background thread did not store a message.
enum Refusal {
    Conflict {
        tenant: String,
        thread: String,
        external_id: String,
        existing: RecordId,
    },
    Failed(Arc<crate::stage::StageError>),
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

enum Command {
    Append(Box<MessageInput>, Reply),
    Flush(oneshot::Sender<IngestStats>),
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
        match rx.await.map_err(|_| StreamError::Closed)? {
            Ok(acked) => Ok(acked),
            Err(Refusal::Conflict {
                tenant,
                thread,
                external_id,
                existing,
            }) => Err(StreamError::Conflict {
                tenant,
                thread,
                external_id,
                existing,
            }),
            Err(Refusal::Failed(cause)) => Err(StreamError::Failed(cause)),
        }
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
                Command::Append(input, reply) => appends.push((input, reply)),
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
    /// Stores one group and answers each of its appends.
    fn commit(&mut self, appends: Vec<(Box<MessageInput>, Reply)>) {
        if appends.is_empty() {
            return;
        }
        match self.prepare_and_append(&appends) {
            Ok(acks) => {
                for ((_, reply), ack) in appends.into_iter().zip(acks) {
                    let _ = reply.send(ack);
                }
            }
            Err(e) => {
                // Nothing of the group is stored; threads reload from the
                // log on the next group.
                self.threads.clear();
                let cause = Arc::new(e);
                for (_, reply) in appends {
                    let _ = reply.send(Err(Refusal::Failed(Arc::clone(&cause))));
                }
            }
        }
    }

    fn prepare_and_append(
        &mut self,
        appends: &[(Box<MessageInput>, Reply)],
    ) -> Result<Vec<Result<Acked, Refusal>>, crate::stage::StageError> {
        let ops = self.options.operators.as_ref();
        let mut records = Vec::new();
        let mut acks = Vec::with_capacity(appends.len());
        let mut group_ids: HashMap<(String, String, String), RecordId> = HashMap::new();
        for (input, _) in appends {
            self.stats.read += 1;
            let key = (
                input.tenant.clone(),
                input.thread.clone(),
                input.external_id.clone(),
            );
            if let Some(id) = group_ids.get(&key) {
                acks.push(Ok(Acked {
                    id: *id,
                    new: false,
                }));
                self.stats.already_stored += 1;
                continue;
            }
            // Stored before: the same content is acknowledged, other content
            // refused (for this message only).
            if let Some(id) = self.store.message_by_external_id(
                &input.tenant,
                &input.thread,
                &input.external_id,
            )? {
                let same = matches!(
                    self.store.get(&id)?.map(|s| s.record),
                    Some(Record::Message(m)) if input.same_content_as(&m)
                );
                self.stats.already_stored += u64::from(same);
                acks.push(if same {
                    Ok(Acked { id, new: false })
                } else {
                    Err(Refusal::Conflict {
                        tenant: input.tenant.clone(),
                        thread: input.thread.clone(),
                        external_id: input.external_id.clone(),
                        existing: id,
                    })
                });
                continue;
            }
            let thread = (input.tenant.clone(), input.thread.clone());
            if !self.threads.contains_key(&thread) {
                let mut loaded = ThreadState::load(self.store, &input.tenant, &input.thread, ops)?;
                records.extend(loaded.seal_loaded(&self.options.sealer, ops)?.records);
                self.threads.insert(thread.clone(), loaded);
            }
            let Some(state) = self.threads.get_mut(&thread) else {
                continue;
            };
            let produced = state.push(self.store, input, &self.options.sealer, ops)?;
            self.stats.failed_runs += produced.failed_runs;
            let id = match produced.records.first() {
                Some(r) => r.id(),
                None => continue,
            };
            group_ids.insert(key, id);
            records.extend(produced.records);
            acks.push(Ok(Acked { id, new: true }));
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
        Ok(acks)
    }
}
