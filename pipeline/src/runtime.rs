//! The staged runtime of a backfill: source → hash + append L5 → seal →
//! summarize → extract → project → group commit, on every core, with
//! bounded memory.
//!
//! ```text
//!  reader ──chunk k, part w──▶ worker w (threads with hash % N == w):
//!  (calling thread:             load thread state, position, hash, seal,
//!   parse, validate,            summarize, extract, project
//!   quarantine, progress)              │ part (k, w): records per input index
//!                                      ▼
//!                               writer: reassembles chunk k from its N parts,
//!                               orders records by input index, appends a
//!                               group of chunks as one fjall batch (fsynced)
//! ```
//!
//! - **Partitioning**: a thread always goes to the same worker (a fixed
//!   FNV-1a hash of tenant and thread), so each worker owns its threads'
//!   state; threads are independent until projection, and projection
//!   needs only one block's events.
//! - **Order**: the reader cuts the input into numbered chunks; every worker
//!   gets its part of every chunk (possibly empty) and the writer appends
//!   chunk k only when all parts are in, records ordered by the input line
//!   that caused them. The log order — hence every record, sequence number
//!   and view digest — is the same for any number of workers.
//! - **Frees**: after a commit the writer sends each worker back the records
//!   it encoded, and the worker drops them before its next part: a free on
//!   the thread that allocated is the allocator's fast path, a free from the
//!   writer its synchronised one on both threads. (A message's text was
//!   allocated by the reader; the worker frees it too, since sending it on
//!   to the reader measured slower.)
//! - **Backpressure**: every channel of work is bounded (the channels that
//!   give records back hold at most what is in flight); a slow writer
//!   stalls the workers, which stall the reader. Memory is O(threads +
//!   chunks in flight), plus one small key per distinct input message for
//!   duplicate detection.
//! - **Checkpoints**: each group is one atomic batch holding the messages,
//!   the blocks they complete, the thread heads (the sealing checkpoint) and
//!   each stage's outputs with its `Derivation` (the stage checkpoint). A
//!   run killed at any instant leaves a prefix of the log; the next run skips
//!   stored messages, reloads thread state from the heads, and derives any
//!   block a failure left underived.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use foldhash::{HashMap, HashSet};
use strataflow_log::envelope::Encoded;
use strataflow_log::record::RecordKind;
use strataflow_log::{Durability, Store};
use strataflow_operators::profile::Operators;
use strataflow_operators::sealer::Sealer;

use crate::commit_observer::CommitObserver;
use crate::field_hash::FieldHash;
use crate::ingest_report::{IngestError, IngestStats, WorkerFailure};
use crate::source::MessageInput;
use crate::thread::ThreadState;

/// Input messages per chunk (the unit of ordering between workers).
pub const CHUNK_MESSAGES: usize = 512;

/// Chunks each worker may have queued.
const QUEUED_CHUNKS: usize = 4;

/// A worker drops the state of a thread it has not seen for this many
/// chunks once the writer has committed everything the thread produced;
/// the thread is loaded again from the log (as a resumed run loads it) if
/// it comes back. Memory is then O(threads of the latest chunks), not
/// O(threads of the run). 64 chunks are 32,768 messages: an export read
/// conversation after conversation holds about a thousand states.
///
/// The window grows when dropped threads come back ([`MAX_IDLE_CHUNKS`]):
/// in an archive interleaving 20,000 threads at random, a fifth of the gaps
/// between two messages of a thread are longer than 32,768 messages, and
/// with a fixed window each of those was a load from the log (46% of all
/// CPU samples of an ingest at 2.5M messages, measured with perf: the
/// point reads of the thread's latest events, mostly outside the block
/// cache).
const IDLE_CHUNKS: u64 = 64;

/// The most a worker's idle window grows to: it doubles each time a
/// dropped thread comes back, up to 1,024 chunks (524,288 messages), so
/// memory stays O(threads of the latest 524,288 messages). An input that
/// never brings a dropped thread back (an export, read conversation after
/// conversation) keeps the window at [`IDLE_CHUNKS`].
const MAX_IDLE_CHUNKS: u64 = 1024;

/// Chunks between two sweeps of idle thread states.
const SWEEP_EVERY: u64 = 16;

/// The sizes behind ordering and thread-state retention (the constants
/// above; tests shrink them).
#[derive(Clone, Copy)]
struct Tuning {
    chunk_messages: usize,
    idle_chunks: u64,
    max_idle_chunks: u64,
    sweep_every: u64,
}

const TUNING: Tuning = Tuning {
    chunk_messages: CHUNK_MESSAGES,
    idle_chunks: IDLE_CHUNKS,
    max_idle_chunks: MAX_IDLE_CHUNKS,
    sweep_every: SWEEP_EVERY,
};

/// Settings of a runtime run.
#[derive(Clone)]
pub struct RuntimeOptions {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// Records per group commit (a group is cut at a chunk boundary once it
    /// holds at least this many records, or when the writer has caught up).
    pub group_records: usize,
    /// Durability of each group.
    pub durability: Durability,
    /// Sealer of the data directory.
    pub sealer: Sealer,
    /// Operators to derive with, inline; `None` stores messages and blocks
    /// only.
    pub operators: Option<Operators>,
    /// Told of each committed batch, on the writer's thread.
    pub observer: Option<Arc<dyn CommitObserver>>,
}

/// A numbered chunk of input, one worker's part.
struct Part {
    chunk: u64,
    items: Vec<(u32, MessageInput)>,
}

/// What a worker made of its part of a chunk.
struct Done {
    /// The worker that produced it (its records go back to it to be freed).
    worker: usize,
    chunk: u64,
    outputs: Vec<(u32, Vec<Encoded>)>,
    threads: u64,
    failed_runs: u64,
}

/// The reader's side of a run: [`Feeder::push`] each validated message; the
/// reader keeps its own counters in [`Feeder::reader`] (read, duplicates in
/// the input, rejects), merged with the writer's into every progress report.
pub struct Feeder<'p> {
    workers: Vec<Sender<Part>>,
    chunk_messages: usize,
    chunk: u64,
    index: u32,
    current: Vec<Vec<(u32, MessageInput)>>,
    updates: Receiver<IngestStats>,
    progress: &'p mut dyn FnMut(&IngestStats),
    written: IngestStats,
    /// The reader's counters.
    pub reader: IngestStats,
}

impl Feeder<'_> {
    /// Queues one message (blocks while the workers are busy). An error
    /// means the runtime stopped; [`run`] returns the reason.
    pub fn push(&mut self, input: MessageInput) -> Result<(), IngestError> {
        let worker = partition(&input.tenant, &input.thread, self.workers.len());
        if let Some(part) = self.current.get_mut(worker) {
            part.push((self.index, input));
        }
        self.index += 1;
        if self.index as usize >= self.chunk_messages {
            self.send()?;
            self.report();
        }
        Ok(())
    }

    /// Passes the writer's progress since the last call to the callback.
    pub fn report(&mut self) {
        let mut latest = None;
        for stats in self.updates.try_iter() {
            latest = Some(stats);
        }
        if let Some(stats) = latest {
            self.written = stats;
            (self.progress)(&self.written.merged(&self.reader));
        }
    }

    fn send(&mut self) -> Result<(), IngestError> {
        if self.index == 0 {
            return Ok(());
        }
        // `current` holds one part per worker.
        for (sender, part) in self.workers.iter().zip(&mut self.current) {
            let items = std::mem::take(part);
            sender
                .send(Part {
                    chunk: self.chunk,
                    items,
                })
                .map_err(|_| stopped())?;
        }
        self.chunk += 1;
        self.index = 0;
        Ok(())
    }
}

fn stopped() -> IngestError {
    IngestError::Worker(WorkerFailure::Stopped)
}

/// Runs the runtime around `feed`, which reads the source in the calling
/// thread and pushes each validated message into the [`Feeder`].
/// `progress` sees the running totals after every group commit.
pub fn run<E: From<IngestError>>(
    store: &Store,
    options: &RuntimeOptions,
    progress: &mut dyn FnMut(&IngestStats),
    feed: impl FnOnce(&mut Feeder<'_>) -> Result<(), E>,
) -> Result<IngestStats, E> {
    run_tuned(store, options, TUNING, progress, feed).map(|(stats, _)| stats)
}

/// [`run`] with the given sizes; also returns how many thread states the
/// workers dropped.
fn run_tuned<E: From<IngestError>>(
    store: &Store,
    options: &RuntimeOptions,
    tuning: Tuning,
    progress: &mut dyn FnMut(&IngestStats),
    feed: impl FnOnce(&mut Feeder<'_>) -> Result<(), E>,
) -> Result<(IngestStats, u64), E> {
    let workers = options.workers.max(1);
    let options = Arc::new(options.clone());
    // Chunks below this are in the log (set by the writer after a commit).
    let committed = AtomicU64::new(0);
    let committed = &committed;
    // The index stage: the writer hands each full index tail to this
    // thread and goes on committing records while it is written.
    let index_stage = store.index_stage();
    let index_stage = &index_stage;
    std::thread::scope(|scope| {
        // Stops the stage however this closure ends (an early return or a
        // panic too), so that the scope's join does not wait for it.
        let _stop_index_stage = StopIndexStage(index_stage);
        let spawn_failed = |e: std::io::Error| IngestError::Worker(WorkerFailure::Spawn(e));
        let (done_tx, done_rx) = bounded::<Done>(QUEUED_CHUNKS * workers);
        let (update_tx, update_rx) = unbounded::<IngestStats>();
        let mut senders = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        let mut returns = Vec::with_capacity(workers);
        for w in 0..workers {
            let (tx, rx) = bounded::<Part>(QUEUED_CHUNKS);
            senders.push(tx);
            let (returned_tx, returned_rx) = unbounded::<Returned>();
            returns.push(returned_tx);
            let done_tx = done_tx.clone();
            let options = Arc::clone(&options);
            let channels = WorkerChannels {
                parts: rx,
                done: done_tx,
                returned: returned_rx,
            };
            handles.push(
                std::thread::Builder::new()
                    .name(format!("strataflow-worker-{w}"))
                    .spawn_scoped(scope, move || {
                        worker(store, &options, tuning, w, &channels, committed)
                    })
                    .map_err(spawn_failed)?,
            );
        }
        drop(done_tx);
        let indexer = std::thread::Builder::new()
            .name("strataflow-index".into())
            .spawn_scoped(scope, move || index_stage.run())
            .map_err(spawn_failed)?;
        let writer_options = Arc::clone(&options);
        let writer = std::thread::Builder::new()
            .name("strataflow-writer".into())
            .spawn_scoped(scope, move || {
                writer(
                    store,
                    &writer_options,
                    &returns,
                    &done_rx,
                    &update_tx,
                    committed,
                )
            })
            .map_err(spawn_failed)?;

        let mut feeder = Feeder {
            workers: senders,
            chunk_messages: tuning.chunk_messages.max(1),
            chunk: 0,
            index: 0,
            current: (0..workers).map(|_| Vec::new()).collect(),
            updates: update_rx,
            progress,
            written: IngestStats::default(),
            reader: IngestStats::default(),
        };
        let fed = feed(&mut feeder);
        let flushed = if fed.is_ok() { feeder.send() } else { Ok(()) };
        let Feeder {
            workers: senders,
            updates,
            progress,
            reader,
            ..
        } = feeder;
        drop(senders);
        // Report progress until the writer is done.
        for stats in updates.iter() {
            progress(&stats.merged(&reader));
        }
        let mut failure: Option<IngestError> = None;
        let mut dropped = 0;
        for h in handles {
            match h.join() {
                Ok(Ok(n)) => dropped += n,
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert(IngestError::Worker(WorkerFailure::WorkerPanicked));
                }
            }
        }
        let written = match writer.join() {
            Ok(result) => result,
            Err(_) => Err(IngestError::Worker(WorkerFailure::WriterPanicked)),
        };
        index_stage.stop();
        let indexed = match indexer.join() {
            Ok(result) => result
                .map(|tails| tracing::debug!(tails, "index stage done"))
                .map_err(IngestError::Store),
            Err(_) => Err(IngestError::Worker(WorkerFailure::IndexStagePanicked)),
        };
        // A failure inside the pipeline explains why the feed was cut short,
        // so it is reported before the feed's own error. The writer's
        // `Incomplete` only says that a worker stopped early: the worker's
        // own error is the cause.
        let stats = match (written, failure) {
            (Err(IngestError::Worker(WorkerFailure::Incomplete { .. })), Some(e))
            | (Err(e), _)
            | (Ok(_), Some(e)) => return Err(E::from(e)),
            (Ok(stats), None) => stats,
        };
        indexed?;
        fed?;
        flushed?;
        Ok((stats.merged(&reader), dropped))
    })
}

/// Stops an index stage when dropped.
struct StopIndexStage<'a, 's>(&'a strataflow_log::IndexStage<'s>);

impl Drop for StopIndexStage<'_, '_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The worker a thread belongs to: FNV-1a over tenant and thread (fixed,
/// so a thread's partition never depends on the process).
#[expect(
    clippy::expect_used,
    reason = "the remainder is below `workers`, a usize"
)]
pub fn partition(tenant: &str, thread: &str, workers: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in tenant.bytes().chain([0xff]).chain(thread.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    usize::try_from(h % workers.max(1) as u64).expect("a remainder below a usize fits a usize")
}

/// A committed group's records, given back to the worker that encoded
/// them: their envelopes and blocks are freed on the thread whose heap
/// holds them, not by the writer (a free from another thread takes the
/// allocator's slower, synchronised path on both threads).
type Returned = Vec<Vec<Encoded>>;

/// A worker's channels: its parts in, its outputs out, and its records
/// back once committed.
struct WorkerChannels {
    parts: Receiver<Part>,
    done: Sender<Done>,
    returned: Receiver<Returned>,
}

fn worker(
    store: &Store,
    options: &RuntimeOptions,
    tuning: Tuning,
    me: usize,
    channels: &WorkerChannels,
    committed: &AtomicU64,
) -> Result<u64, IngestError> {
    let WorkerChannels {
        parts,
        done,
        returned,
    } = channels;
    // Each thread's state and the last chunk that touched it, by the
    // thread's key hash ([`thread_hash`]: no copy of its names per message).
    let mut threads: HashMap<u128, (ThreadState, u64)> = HashMap::default();
    // Threads whose state was dropped (by key hash): loading one again is
    // no new thread of the run.
    let mut dropped: HashSet<u128> = HashSet::default();
    let mut dropped_states = 0u64;
    let mut window = IdleWindow::new(tuning);
    let operators = options.operators.as_ref();
    for part in parts {
        let _span = tracing::debug_span!("worker", chunk = part.chunk).entered();
        // Frees what the writer committed since the last part.
        returned.try_iter().for_each(drop);
        let chunk = part.chunk;
        let mut out = Done {
            worker: me,
            chunk,
            outputs: Vec::with_capacity(part.items.len()),
            threads: 0,
            failed_runs: 0,
        };
        for (index, input) in part.items {
            let key = thread_hash(&input.tenant, &input.thread);
            let mut records = Vec::new();
            let (state, last) = match threads.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let mut state =
                        ThreadState::load(store, &input.tenant, &input.thread, operators)?;
                    let loaded = state.seal_loaded(&options.sealer, operators)?;
                    out.failed_runs += loaded.failed_runs;
                    records.extend(loaded.records);
                    if dropped.remove(&key) {
                        window.widen();
                    } else {
                        out.threads += 1;
                    }
                    e.insert((state, chunk))
                }
            };
            *last = chunk;
            let produced = state.push(store, input, &options.sealer, operators)?;
            out.failed_runs += produced.failed_runs;
            records.extend(produced.records);
            out.outputs.push((index, records));
        }
        if done.send(out).is_err() {
            // The writer stopped; its error is the one to report.
            return Ok(dropped_states);
        }
        if chunk.is_multiple_of(tuning.sweep_every.max(1)) {
            // A state is dropped only when every record its thread produced
            // is in the log, so loading it again gives the same state.
            let in_log = committed.load(Ordering::Acquire);
            threads.retain(|key, (_, last)| {
                let keep = window.keeps(*last, chunk) || *last >= in_log;
                if !keep {
                    dropped.insert(*key);
                    dropped_states += 1;
                }
                keep
            });
        }
    }
    Ok(dropped_states)
}

/// How many chunks a worker keeps the state of a thread it has not seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IdleWindow {
    chunks: u64,
    max: u64,
}

impl IdleWindow {
    fn new(tuning: Tuning) -> Self {
        Self {
            chunks: tuning.idle_chunks,
            max: tuning.max_idle_chunks.max(tuning.idle_chunks),
        }
    }

    /// A dropped thread came back: this input's threads return after
    /// longer gaps than the window, which doubles (up to its maximum).
    fn widen(&mut self) {
        self.chunks = self.chunks.saturating_mul(2).min(self.max);
    }

    /// Whether the state of a thread last seen in chunk `last` is kept at
    /// chunk `chunk`.
    fn keeps(&self, last: u64, chunk: u64) -> bool {
        last.saturating_add(self.chunks) > chunk
    }
}

/// A 128-bit hash of a thread's key.
fn thread_hash(tenant: &str, thread: &str) -> u128 {
    static THREAD_KEY: std::sync::LazyLock<blake3::Hasher> = std::sync::LazyLock::new(|| {
        blake3::Hasher::new_derive_key("strataflow runtime thread key v1")
    });
    let mut fields = FieldHash::with_capacity(16 + tenant.len() + thread.len());
    fields.field(tenant.as_bytes()).field(thread.as_bytes());
    fields.hash(&THREAD_KEY)
}

fn writer(
    store: &Store,
    options: &RuntimeOptions,
    returns: &[Sender<Returned>],
    done: &Receiver<Done>,
    updates: &Sender<IngestStats>,
    committed: &AtomicU64,
) -> Result<IngestStats, IngestError> {
    let mut stats = IngestStats::default();
    // chunk → parts received so far.
    let mut pending: BTreeMap<u64, Vec<Done>> = BTreeMap::new();
    let mut next_chunk = 0u64;
    let workers = returns.len();
    // The records of the group, each with the worker that encoded them.
    let mut group: Vec<(u32, usize, Vec<Encoded>)> = Vec::new();
    let mut group_records = 0usize;
    let commit = |group: &mut Vec<(u32, usize, Vec<Encoded>)>,
                  group_records: &mut usize,
                  stats: &mut IngestStats|
     -> Result<(), IngestError> {
        if group.is_empty() {
            return Ok(());
        }
        // Appended where the workers left them (no copy into one list).
        let records = || group.iter().flat_map(|(_, _, r)| r);
        let count = records().count();
        if count > 0 {
            let _span = tracing::debug_span!("append", records = count).entered();
            crate::pause::point("append");
            let receipt = store.append_encoded(records(), options.durability)?;
            if let Some(observer) = &options.observer {
                let new: Vec<(u64, &Encoded)> = records()
                    .zip(&receipt.records)
                    .filter(|(_, appended)| appended.new)
                    .map(|(record, appended)| (appended.seq, record))
                    .collect();
                observer.committed(&new);
            }
            for (record, appended) in records().zip(&receipt.records) {
                if appended.new {
                    match record.record().kind() {
                        RecordKind::Message => stats.stored += 1,
                        RecordKind::Block => stats.blocks_sealed += 1,
                        RecordKind::BlockSummary => stats.summaries += 1,
                        RecordKind::Event => stats.events += 1,
                        RecordKind::GraphAssertion => stats.assertions += 1,
                        _ => {}
                    }
                }
            }
            stats.batches += 1;
        }
        let mut back: Vec<Returned> = (0..workers).map(|_| Vec::new()).collect();
        for (_, worker, records) in group.drain(..) {
            if let Some(to) = back.get_mut(worker) {
                to.push(records);
            }
        }
        for (to, records) in returns.iter().zip(back) {
            // A worker that has stopped leaves its records to be freed here.
            if !records.is_empty() {
                let _ = to.send(records);
            }
        }
        *group_records = 0;
        // The progress channel is unbounded and read by the caller; if the
        // caller is gone there is no one to tell.
        let _ = updates.send(*stats);
        Ok(())
    };
    loop {
        // Take what has arrived; wait only when nothing is ready to commit.
        let received = if group.is_empty() {
            // default: `recv` fails only once every worker is gone, i.e. no
            // more parts.
            done.recv().ok()
        } else {
            match done.try_recv() {
                Ok(d) => Some(d),
                Err(crossbeam_channel::TryRecvError::Empty) => {
                    commit(&mut group, &mut group_records, &mut stats)?;
                    committed.store(next_chunk, Ordering::Release);
                    continue;
                }
                Err(crossbeam_channel::TryRecvError::Disconnected) => None,
            }
        };
        let Some(d) = received else {
            break;
        };
        stats.threads += d.threads;
        stats.failed_runs += d.failed_runs;
        pending.entry(d.chunk).or_default().push(d);
        // Move every complete chunk, in order, into the group.
        while pending.get(&next_chunk).is_some_and(|p| p.len() == workers) {
            let Some(parts) = pending.remove(&next_chunk) else {
                break;
            };
            let mut outputs: Vec<(u32, usize, Vec<Encoded>)> = parts
                .into_iter()
                .flat_map(|p| {
                    let worker = p.worker;
                    p.outputs.into_iter().map(move |(i, r)| (i, worker, r))
                })
                .collect();
            outputs.sort_unstable_by_key(|(index, _, _)| *index);
            for (index, worker, records) in outputs {
                if records.is_empty() {
                    stats.already_stored += 1;
                }
                group_records += records.len();
                group.push((index, worker, records));
            }
            next_chunk += 1;
            if group_records >= options.group_records {
                commit(&mut group, &mut group_records, &mut stats)?;
                committed.store(next_chunk, Ordering::Release);
            }
        }
    }
    commit(&mut group, &mut group_records, &mut stats)?;
    if !pending.is_empty() {
        return Err(IngestError::Worker(WorkerFailure::Incomplete {
            pending: pending.len(),
        }));
    }
    Ok(stats)
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use strataflow_log::Digest;
    use strataflow_log::record::{BlockSummary, Role};
    use strataflow_log::time::SourceTime;
    use strataflow_operators::model::ModelError;
    use strataflow_operators::operator::{BlockInput, OperatorError, OperatorId, Summarizer};
    use strataflow_operators::profile::{Profile, Registry};

    use super::*;
    use crate::source::Location;

    /// Halts (or panics) on the blocks of one thread, summarizes the others
    /// like the embedded heuristic.
    struct FailsOn {
        thread: String,
        panics: bool,
    }

    fn halt() -> ModelError {
        ModelError::Offline {
            operator: "llm-summarizer@1".into(),
            subject: "block b".into(),
        }
    }

    impl Summarizer for FailsOn {
        fn id(&self) -> OperatorId {
            OperatorId::new("fails-on", 1)
        }
        fn config_hash(&self) -> Digest {
            Digest::default()
        }
        fn summarize(&self, block: &BlockInput<'_>) -> Result<BlockSummary, OperatorError> {
            if block.block.thread == self.thread {
                assert!(!self.panics, "summarizer panics on its thread");
                return Err(OperatorError::from(halt()));
            }
            strataflow_operators::summarizer::heuristic::HeuristicSummarizer.summarize(block)
        }
    }

    /// Two thread names that go to different workers of 2.
    fn two_partitions() -> (String, String) {
        let first = "t0".to_owned();
        let other = (1..)
            .map(|i| format!("t{i}"))
            .find(|t| partition("x", t, 2) != partition("x", &first, 2))
            .unwrap();
        (first, other)
    }

    fn input(thread: &str, n: usize) -> MessageInput {
        input_with(
            thread,
            n,
            format!("message {n} of {thread}: we met Alice in Paris yesterday"),
            60_000,
        )
    }

    /// Message `n` of `thread` (tenant `x`, id `m{n}`, user and assistant
    /// in turn), `step_ms` after the one before.
    pub(crate) fn input_with(
        thread: &str,
        n: usize,
        content: String,
        step_ms: i64,
    ) -> MessageInput {
        MessageInput {
            location: Location {
                file: "a.jsonl".into(),
                line: Some(n + 1),
                path: None,
            },
            tenant: "x".into(),
            thread: thread.into(),
            external_id: format!("m{n}"),
            role: if n.is_multiple_of(2) {
                Role::User
            } else {
                Role::Assistant
            },
            speaker: None,
            content,
            tool_calls: Vec::new(),
            time: SourceTime {
                utc_ms: 1_700_000_000_000 + i64::try_from(n).unwrap() * step_ms,
                offset_minutes: None,
            },
        }
    }

    /// A run with 2 workers whose summarizer fails on one thread's blocks.
    fn run_failing(panics: bool) -> IngestError {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("data")).unwrap();
        let (failing, healthy) = two_partitions();
        let mut operators = Registry::builtin()
            .resolve(&Profile::default_profile())
            .unwrap();
        operators.summarizer = Arc::new(FailsOn {
            thread: failing.clone(),
            panics,
        });
        let options = RuntimeOptions {
            workers: 2,
            group_records: 64,
            durability: Durability::Buffered,
            sealer: Sealer::new(1),
            operators: Some(operators),
            observer: None,
        };
        run::<IngestError>(&store, &options, &mut |_| {}, |feeder| {
            for n in 0..8 {
                feeder.push(input(&healthy, n))?;
                feeder.push(input(&failing, n))?;
            }
            Ok(())
        })
        .unwrap_err()
    }

    /// The log of a run of thread `a` (6 messages), then 40 fillers of
    /// one message each, then `a` again (10 messages), chunks of 4, with
    /// derivation: the record ids in log order, the stats and the states
    /// dropped.
    fn run_returning(idle_chunks: u64) -> (Vec<strataflow_log::RecordId>, IngestStats, u64) {
        run_rounds(
            Tuning {
                chunk_messages: 4,
                idle_chunks,
                max_idle_chunks: MAX_IDLE_CHUNKS,
                sweep_every: 1,
            },
            &[6, 10],
        )
    }

    /// The log of a run of rounds: thread `a` (`rounds[i]` messages, numbered
    /// on), then 40 fillers of one message each between two rounds, with
    /// derivation: the record ids in log order, the stats and the states
    /// dropped.
    fn run_rounds(
        tuning: Tuning,
        rounds: &[usize],
    ) -> (Vec<strataflow_log::RecordId>, IngestStats, u64) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("data")).unwrap();
        let operators = Registry::builtin()
            .resolve(&Profile::default_profile())
            .unwrap();
        let options = RuntimeOptions {
            workers: 1,
            group_records: 1,
            durability: Durability::Buffered,
            sealer: Sealer::new(2),
            operators: Some(operators),
            observer: None,
        };
        let (stats, dropped) =
            run_tuned::<IngestError>(&store, &options, tuning, &mut |_| {}, |feeder| {
                let mut n = 0;
                for (round, messages) in rounds.iter().enumerate() {
                    if round > 0 {
                        for f in 0..40 {
                            feeder.push(input(&format!("filler{round}-{f}"), 0))?;
                        }
                    }
                    for _ in 0..*messages {
                        feeder.push(input("a", n))?;
                        n += 1;
                    }
                }
                Ok(())
            })
            .unwrap();
        let ids = store.scan(1).map(|r| r.unwrap().id).collect();
        (ids, stats, dropped)
    }

    #[test]
    fn the_writer_gives_each_worker_back_the_records_it_encoded() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("data")).unwrap();
        let options = RuntimeOptions {
            workers: 2,
            group_records: 1,
            durability: Durability::Buffered,
            sealer: Sealer::new(1),
            operators: None,
            observer: None,
        };
        let threads = {
            let (a, b) = two_partitions();
            [a, b]
        };
        let mut states = threads
            .clone()
            .map(|t| crate::thread::ThreadState::load(&store, "x", &t, None).unwrap());
        let (done_tx, done_rx) = bounded::<Done>(16);
        let (returned_tx, returned_rx): (Vec<_>, Vec<_>) =
            (0..2).map(|_| unbounded::<Returned>()).unzip();
        let (update_tx, _updates) = unbounded::<IngestStats>();
        let mut encoded: [Vec<strataflow_log::RecordId>; 2] = Default::default();
        for chunk in 0..3u64 {
            let n = usize::try_from(chunk).unwrap();
            for (w, state) in states.iter_mut().enumerate() {
                let produced = state
                    .push(&store, input(&threads[w], n), &options.sealer, None)
                    .unwrap();
                encoded[w].extend(produced.records.iter().map(Encoded::id));
                let index = u32::try_from(2 * n + w).unwrap();
                done_tx
                    .send(Done {
                        worker: w,
                        chunk,
                        outputs: vec![(index, produced.records)],
                        threads: 0,
                        failed_runs: 0,
                    })
                    .unwrap();
            }
        }
        drop(done_tx);
        let committed = AtomicU64::new(0);
        let stats = writer(
            &store,
            &options,
            &returned_tx,
            &done_rx,
            &update_tx,
            &committed,
        )
        .unwrap();
        assert_eq!(stats.stored, 6);
        assert!(stats.blocks_sealed > 0, "blocks are given back too");
        for (w, returned) in returned_rx.iter().enumerate() {
            let back: Vec<strataflow_log::RecordId> = returned
                .try_iter()
                .flatten()
                .flatten()
                .map(|e| e.id())
                .collect();
            assert_eq!(
                back, encoded[w],
                "worker {w} gets back what it encoded, in order"
            );
        }
    }

    #[test]
    fn a_thread_dropped_while_idle_and_loaded_again_gives_the_same_log() {
        let (kept_ids, kept_stats, kept_dropped) = run_returning(u64::MAX);
        let (ids, stats, dropped) = run_returning(1);
        assert_eq!(kept_dropped, 0);
        // Thread `a` and the early fillers were dropped once committed.
        assert!(dropped > 0, "no state dropped");
        assert_eq!(ids, kept_ids);
        assert_eq!(stats, kept_stats);
        assert_eq!(stats.threads, 41);
        assert_eq!(stats.stored, 56);
    }

    #[test]
    fn the_idle_window_doubles_up_to_its_maximum() {
        let mut window = IdleWindow::new(Tuning {
            idle_chunks: 64,
            max_idle_chunks: 1024,
            ..TUNING
        });
        assert!(window.keeps(10, 73) && !window.keeps(10, 74));
        let mut sizes = Vec::new();
        for _ in 0..6 {
            window.widen();
            sizes.push(window.chunks);
        }
        assert_eq!(sizes, [128, 256, 512, 1024, 1024, 1024]);
        assert!(window.keeps(10, 1033) && !window.keeps(10, 1034));
        // A maximum below the start leaves the window as it is.
        let mut fixed = IdleWindow::new(Tuning {
            idle_chunks: 64,
            max_idle_chunks: 8,
            ..TUNING
        });
        fixed.widen();
        assert_eq!(fixed.chunks, 64);
    }

    /// A thread that keeps coming back after the window widens it: fewer
    /// states are dropped and loaded again, and the log is the same.
    #[test]
    fn a_thread_that_keeps_coming_back_widens_the_window_and_leaves_the_same_log() {
        let rounds = [2, 2, 2, 2, 2, 2, 2];
        let tuning = |max_idle_chunks| Tuning {
            chunk_messages: 4,
            idle_chunks: 1,
            max_idle_chunks,
            sweep_every: 1,
        };
        let (fixed_ids, fixed_stats, fixed_dropped) = run_rounds(tuning(1), &rounds);
        let (ids, stats, dropped) = run_rounds(tuning(64), &rounds);
        assert_eq!(ids, fixed_ids);
        assert_eq!(stats, fixed_stats);
        assert!(
            dropped < fixed_dropped,
            "widened window dropped {dropped}, fixed one {fixed_dropped}"
        );
    }

    #[test]
    fn a_halting_worker_is_reported_not_the_writers_incomplete() {
        let err = run_failing(false);
        assert!(
            matches!(&err, IngestError::Halted(cause) if *cause == halt()),
            "{err:?}"
        );
    }

    #[test]
    fn a_panicking_worker_is_reported_not_the_writers_incomplete() {
        let err = run_failing(true);
        assert!(
            matches!(&err, IngestError::Worker(WorkerFailure::WorkerPanicked)),
            "{err:?}"
        );
    }
}
