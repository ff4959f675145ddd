//! Derivation: block summaries, events and graph assertions for every
//! sealed block, under one profile's operators.
//!
//! Per thread, blocks are processed in ordinal order, each through three
//! stages: summarize, extract (skipped when the summary says there is
//! nothing to extract), project (the events of that extraction). Every run
//! of an operator appends its outputs and a `Derivation` record in one
//! atomic batch; a failed run appends a failed `Derivation` and nothing
//! else, so messages and blocks are never lost or rolled back.
//!
//! Whether a stage is done is read from the log (the `Derivation` children
//! of its input), never from a side table: running derivation again on the
//! same data adds nothing, and a second profile runs only the operators
//! whose id or configuration differ; outputs identical to existing records
//! are not written again because ids are content.
//!
//! Failures are retried at most [`RetryPolicy::max_attempts`] times in all
//! (3 by default), after 1 s then 2 s within one run; a stage that failed
//! that often is terminal and reported by `status`. Retrying never holds
//! back other blocks or sealing.
//!
//! A block is **ready** when its summary is stored and its extraction
//! succeeded, validly returned nothing, or was skipped.

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use strataflow_log::record::{
    Block, BlockSummary, Derivation, EXTERNAL_IMPORT_THREAD_PREFIX, Event, Message, Outcome,
    Record, RecordKind,
};
use strataflow_log::{Digest, Durability, RecordId, Store, StoreError};
use strataflow_operators::operator::{BlockInput, OperatorId, TIMELINE_LIMIT};
use strataflow_operators::profile::Operators;
use strataflow_text::Analysis;

use crate::stage::{self, ExtractionContext, StageRun};
use strataflow_log::envelope::Encoded;

/// How failed operator runs are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, first included (spec: 3).
    pub max_attempts: u32,
    /// Wait after the first failure; doubled after each further one (1 s, 2 s).
    pub first_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            first_backoff: Duration::from_secs(1),
        }
    }
}

/// Settings of a derivation run.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeriveOptions {
    /// Durability of each committed batch.
    pub durability: Durability,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Wait out backoffs and retry within this run (the CLI does); when
    /// false, a failed stage is left for the next run.
    pub wait_for_retries: bool,
}

/// Counters of a derivation run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeriveStats {
    /// Blocks seen.
    pub blocks: u64,
    /// Blocks ready at the end.
    pub ready: u64,
    /// Operator runs made (successful or not).
    pub runs: u64,
    /// Runs that failed.
    pub failed_runs: u64,
    /// Summaries written.
    pub summaries: u64,
    /// Events written.
    pub events: u64,
    /// Graph assertions written.
    pub assertions: u64,
    /// Stages that failed the maximum number of times.
    pub terminal: u64,
    /// Stages waiting for a retry when the run ended.
    pub waiting: u64,
    /// Embeddings written (a profile with an embedder).
    pub embeddings: u64,
    /// Sources that already had an embedding of the profile's embedder.
    pub embeddings_already: u64,
}

/// Error of a derivation run (operator failures are not errors: they are
/// recorded and retried).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeriveError {
    /// The log failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A record the log points at is missing or of another kind.
    #[error("damaged log: {kind} {id} is missing")]
    Missing {
        /// The kind expected (`block`, `message`, `summary`, `event`).
        kind: &'static str,
        /// The record cited.
        id: RecordId,
    },
    /// A successful derivation names no output.
    #[error("damaged log: {stage} derivation of block {input} has no output")]
    NoOutput {
        /// The stage (`summary`).
        stage: &'static str,
        /// The block derived.
        input: RecordId,
    },
    /// An operator stopped the run (offline and a model call is not
    /// recorded, the model is not configured or unreachable); nothing of
    /// that run was written.
    #[error("{0}")]
    Halted(strataflow_operators::model::ModelError),
}

impl From<crate::stage::StageError> for DeriveError {
    fn from(e: crate::stage::StageError) -> Self {
        match e {
            crate::stage::StageError::Store(e) => Self::Store(e),
            crate::stage::StageError::Halted(cause) => Self::Halted(cause),
        }
    }
}

/// One stage's history for an operator and input, read from the log.
#[derive(Clone, Debug, Default)]
pub struct StageState {
    /// The successful (or skipped) derivation, if any.
    pub done: Option<Derivation>,
    /// Failed attempts so far.
    pub failures: u32,
    /// The last failure's error.
    pub last_error: Option<String>,
}

/// The stage history of operator `op` (with `config`) on `anchor`; with
/// `inputs`, only derivations over exactly those inputs count.
pub fn stage_state(
    store: &Store,
    anchor: &RecordId,
    op: &OperatorId,
    config: &Digest,
    inputs: Option<&[RecordId]>,
) -> Result<StageState, StoreError> {
    Ok(state_among(
        &derivations_of(store, anchor)?,
        op,
        config,
        inputs,
    ))
}

/// The `Derivation` children of `anchor`, in log order.
fn derivations_of(store: &Store, anchor: &RecordId) -> Result<Vec<Derivation>, StoreError> {
    Ok(store
        .children_of_kind(anchor, RecordKind::Derivation)?
        .into_iter()
        .filter_map(|stored| match stored.record {
            Record::Derivation(d) => Some(d),
            _ => None,
        })
        .collect())
}

/// The stage history of `op` (with `config`) among an anchor's
/// derivations (see [`stage_state`]).
fn state_among(
    derivations: &[Derivation],
    op: &OperatorId,
    config: &Digest,
    inputs: Option<&[RecordId]>,
) -> StageState {
    let name = op.to_string();
    let mut state = StageState::default();
    for d in derivations {
        if d.operator != name || d.config_hash != *config || inputs.is_some_and(|i| d.inputs != i) {
            continue;
        }
        match &d.outcome {
            Outcome::Ok | Outcome::Skipped { .. } => state.done = Some(d.clone()),
            Outcome::Failed { error } => {
                state.failures += 1;
                state.last_error = Some(error.clone());
            }
        }
    }
    state
}

/// The summarizer's history on `block` (see [`stage_state`]).
pub fn summary_state(
    store: &Store,
    ops: &Operators,
    block: &RecordId,
) -> Result<StageState, StoreError> {
    let s = &ops.summarizer;
    stage_state(store, block, &s.id(), &s.config_hash(), None)
}

/// The extractor's history on `block`.
pub fn extraction_state(
    store: &Store,
    ops: &Operators,
    block: &RecordId,
) -> Result<StageState, StoreError> {
    let x = &ops.extractor;
    stage_state(store, block, &x.id(), &x.config_hash(), None)
}

/// The projector's history on a batch of events (anchored at the first;
/// only derivations over exactly `events` count). `None` for an empty batch.
pub fn projection_state(
    store: &Store,
    ops: &Operators,
    events: &[RecordId],
) -> Result<Option<StageState>, StoreError> {
    let Some(first) = events.first() else {
        return Ok(None);
    };
    let p = &ops.projector;
    stage_state(store, first, &p.id(), &p.config_hash(), Some(events)).map(Some)
}

/// Runs every pending or retryable stage of every block.
pub fn derive(
    store: &Store,
    ops: &Operators,
    options: &DeriveOptions,
    progress: &mut dyn FnMut(&DeriveStats),
) -> Result<DeriveStats, DeriveError> {
    let mut run = Run {
        store,
        ops,
        options,
        stats: DeriveStats::default(),
        not_before: HashMap::new(),
        next_wake: None,
    };
    loop {
        run.stats = DeriveStats {
            runs: run.stats.runs,
            failed_runs: run.stats.failed_runs,
            summaries: run.stats.summaries,
            events: run.stats.events,
            assertions: run.stats.assertions,
            ..DeriveStats::default()
        };
        run.next_wake = None;
        for blocks in threads(store)?.values() {
            run.thread(blocks)?;
            progress(&run.stats);
        }
        match run.next_wake {
            Some(wake) if options.wait_for_retries => {
                std::thread::sleep(wake.saturating_duration_since(Instant::now()));
            }
            _ => break,
        }
    }
    Ok(run.stats)
}

/// Block ids per (tenant, thread), in ordinal order. The source blocks of
/// external memory imports (threads `external-import:…`) are left out:
/// their events come from the import, never from an extractor.
fn threads(store: &Store) -> Result<BTreeMap<(String, String), Vec<RecordId>>, DeriveError> {
    let mut out: BTreeMap<(String, String), Vec<(u32, RecordId)>> = BTreeMap::new();
    for entry in store.ids_of_kind(RecordKind::Block) {
        let (_, id) = entry?;
        let b = block(store, &id)?;
        if b.thread.starts_with(EXTERNAL_IMPORT_THREAD_PREFIX) {
            continue;
        }
        out.entry((b.tenant, b.thread))
            .or_default()
            .push((b.ordinal, id));
    }
    Ok(out
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_unstable();
            (k, v.into_iter().map(|(_, id)| id).collect())
        })
        .collect())
}

fn block(store: &Store, id: &RecordId) -> Result<Block, DeriveError> {
    match store.get(id)?.map(|s| s.record) {
        Some(Record::Block(b)) => Ok(b),
        _ => Err(DeriveError::Missing {
            kind: "block",
            id: *id,
        }),
    }
}

/// What a block's extraction gave: its events, made in this pass, or the
/// ids an extraction made before named (read only when a stage needs them).
enum Extracted {
    Now(Vec<(RecordId, Event)>),
    Before(Vec<RecordId>),
}

/// A thread's recent events, oldest first, at most [`TIMELINE_LIMIT`]:
/// those read (or extracted in this pass), then the ids of those that
/// extractions done before named, read only when an extraction runs.
#[derive(Default)]
struct Timeline {
    read: Vec<(RecordId, Event)>,
    unread: Vec<RecordId>,
}

impl Timeline {
    /// Events extracted in this pass (every earlier one is read: the
    /// extraction read the timeline).
    fn push_read(&mut self, events: Vec<(RecordId, Event)>) {
        self.read.extend(events);
        self.trim();
    }

    fn push_unread(&mut self, ids: &[RecordId]) {
        self.unread.extend_from_slice(ids);
        self.trim();
    }

    /// Keeps the last [`TIMELINE_LIMIT`] events.
    fn trim(&mut self) {
        let excess = (self.read.len() + self.unread.len()).saturating_sub(TIMELINE_LIMIT);
        let from_read = excess.min(self.read.len());
        self.read.drain(..from_read);
        self.unread.drain(..excess - from_read);
    }
}

/// A block whose messages are read only when a stage needs them
/// ([`Run::read_input`]).
struct UnreadInput<'a> {
    id: RecordId,
    block: &'a Block,
    messages: &'a OnceCell<Vec<(RecordId, Message)>>,
}

/// Stage keys for the retry schedule.
#[derive(Clone, PartialEq, Eq, Hash)]
enum StageKey {
    Summary(RecordId),
    Extraction(RecordId),
    Projection(RecordId),
}

struct Run<'a> {
    store: &'a Store,
    ops: &'a Operators,
    options: &'a DeriveOptions,
    stats: DeriveStats,
    not_before: HashMap<StageKey, Instant>,
    next_wake: Option<Instant>,
}

/// What happened to a stage in this pass.
enum Step<T> {
    Done(T),
    NotYet,
}

impl Run<'_> {
    fn thread(&mut self, blocks: &[RecordId]) -> Result<(), DeriveError> {
        let mut timeline = Timeline::default();
        for (i, block_id) in blocks.iter().enumerate() {
            let neighbours = (
                i.checked_sub(1).and_then(|p| blocks.get(p)),
                blocks.get(i + 1),
            );
            self.stats.blocks += 1;
            let block = block(self.store, block_id)?;
            // What a stage reads is read only when it runs: the messages
            // (and their text analysis, computed once for the summarizer
            // and the extractor), the summary, the thread's earlier
            // events. A block whose stages are done costs its own record,
            // its derivations (read once for both of its stages) and its
            // projection's state: a catch-up over a derived store reads
            // nothing more.
            let messages = OnceCell::new();
            let analyses = OnceCell::new();
            let input = UnreadInput {
                id: *block_id,
                block: &block,
                messages: &messages,
            };
            let derivations = derivations_of(self.store, block_id)?;
            let Step::Done((summary_id, summary)) =
                self.summary(&input, &derivations, &analyses)?
            else {
                continue;
            };
            let Step::Done(extracted) = self.extraction(
                &input,
                &derivations,
                &analyses,
                (summary_id, summary),
                &mut timeline,
                neighbours,
            )?
            else {
                continue;
            };
            self.stats.ready += 1;
            match extracted {
                Extracted::Now(events) => {
                    if !events.is_empty() {
                        let ids: Vec<RecordId> = events.iter().map(|(id, _)| *id).collect();
                        self.projection(&block.tenant, &ids, Some(&events))?;
                    }
                    timeline.push_read(events);
                }
                Extracted::Before(ids) => {
                    if !ids.is_empty() {
                        self.projection(&block.tenant, &ids, None)?;
                    }
                    timeline.push_unread(&ids);
                }
            }
        }
        Ok(())
    }

    /// The stages' input of a block, its messages read from the log the
    /// first time.
    fn read_input<'a>(&self, input: &UnreadInput<'a>) -> Result<BlockInput<'a>, DeriveError> {
        let messages = match input.messages.get() {
            Some(read) => read,
            None => {
                let read = self.messages(input.block)?;
                input.messages.get_or_init(|| read)
            }
        };
        Ok(BlockInput {
            id: input.id,
            block: input.block,
            messages,
            attempt: 1,
            analyses: None,
        })
    }

    fn messages(&self, block: &Block) -> Result<Vec<(RecordId, Message)>, DeriveError> {
        block
            .messages
            .iter()
            .map(|id| match self.store.get(id)?.map(|s| s.record) {
                Some(Record::Message(m)) => Ok((*id, m)),
                _ => Err(DeriveError::Missing {
                    kind: "message",
                    id: *id,
                }),
            })
            .collect()
    }

    /// Whether a stage with `failures` may run now; records terminal and
    /// waiting stages.
    fn may_run(&mut self, key: &StageKey, failures: u32) -> bool {
        if failures >= self.options.retry.max_attempts {
            self.stats.terminal += 1;
            return false;
        }
        match self.not_before.get(key) {
            Some(t) if *t > Instant::now() => {
                self.stats.waiting += 1;
                self.next_wake = Some(self.next_wake.map_or(*t, |w| w.min(*t)));
                false
            }
            _ => true,
        }
    }

    fn failed(&mut self, key: StageKey, attempt: u32) {
        self.stats.failed_runs += 1;
        if attempt < self.options.retry.max_attempts {
            let wait = self.options.retry.first_backoff * 2u32.saturating_pow(attempt - 1);
            let at = Instant::now() + wait;
            self.not_before.insert(key, at);
            self.stats.waiting += 1;
            self.next_wake = Some(self.next_wake.map_or(at, |w| w.min(at)));
        } else {
            self.stats.terminal += 1;
        }
    }

    fn append(&mut self, records: Vec<Encoded>) -> Result<Vec<RecordId>, DeriveError> {
        let receipt = self
            .store
            .append_encoded(&records, self.options.durability)?;
        for (r, a) in records.iter().zip(&receipt.records) {
            if a.new {
                match r.record().kind() {
                    RecordKind::BlockSummary => self.stats.summaries += 1,
                    RecordKind::Event => self.stats.events += 1,
                    RecordKind::GraphAssertion => self.stats.assertions += 1,
                    _ => {}
                }
            }
        }
        Ok(receipt.records.iter().map(|a| a.id).collect())
    }

    /// Appends a stage run; a failure schedules its retry. Returns the
    /// stage's output when it succeeded.
    fn commit<T>(
        &mut self,
        key: StageKey,
        attempt: u32,
        run: StageRun<T>,
    ) -> Result<Option<T>, DeriveError> {
        self.append(run.records)?;
        if run.error.is_some() {
            self.failed(key, attempt);
        }
        Ok(run.output)
    }

    fn summary<'a>(
        &mut self,
        input: &UnreadInput<'a>,
        derivations: &[Derivation],
        analyses: &'a OnceCell<Vec<Analysis>>,
    ) -> Result<Step<(RecordId, Option<BlockSummary>)>, DeriveError> {
        let s = &self.ops.summarizer;
        let state = state_among(derivations, &s.id(), &s.config_hash(), None);
        if let Some(done) = state.done {
            let id = done.outputs.first().copied().ok_or(DeriveError::NoOutput {
                stage: "summary",
                input: input.id,
            })?;
            return Ok(Step::Done((id, None)));
        }
        let key = StageKey::Summary(input.id);
        if !self.may_run(&key, state.failures) {
            return Ok(Step::NotYet);
        }
        self.stats.runs += 1;
        let attempt = state.failures + 1;
        let input = self.read_input(input)?;
        let input = stage::carrying(self.ops.summarizer.reads_analysis(), &input, analyses);
        let run = stage::summarize(self.ops, &input, attempt)?;
        Ok(match self.commit(key, attempt, run)? {
            Some((id, summary)) => Step::Done((id, Some(summary))),
            None => Step::NotYet,
        })
    }

    /// The block's extraction: its events when it runs now, their ids when
    /// it was done before. `summary` is the block's summary id and, when
    /// it was made in this pass, the summary.
    fn extraction<'a>(
        &mut self,
        input: &UnreadInput<'a>,
        derivations: &[Derivation],
        analyses: &'a OnceCell<Vec<Analysis>>,
        summary: (RecordId, Option<BlockSummary>),
        timeline: &mut Timeline,
        neighbours: (Option<&RecordId>, Option<&RecordId>),
    ) -> Result<Step<Extracted>, DeriveError> {
        let x = &self.ops.extractor;
        let state = state_among(derivations, &x.id(), &x.config_hash(), None);
        if let Some(done) = state.done {
            return Ok(Step::Done(Extracted::Before(done.outputs)));
        }
        let (summary_id, summary) = match summary {
            (id, Some(summary)) => (id, summary),
            (id, None) => (id, self.summary_record(id)?),
        };
        let key = StageKey::Extraction(input.id);
        // A skipped extraction never fails, so it needs no retry slot.
        if summary.should_extract && !self.may_run(&key, state.failures) {
            return Ok(Step::NotYet);
        }
        if summary.should_extract {
            self.stats.runs += 1;
        }
        let previous = self.key_points(neighbours.0)?;
        let next = self.key_points(neighbours.1)?;
        let context = ExtractionContext {
            summary_id,
            summary: &summary,
            previous_key_points: previous.as_deref(),
            next_key_points: next.as_deref(),
            timeline: self.read_timeline(timeline)?.into(),
        };
        let attempt = state.failures + 1;
        let input = self.read_input(input)?;
        let input = stage::carrying(self.ops.extractor.reads_analysis(), &input, analyses);
        let run = stage::extract(self.ops, &input, &context, attempt)?;
        Ok(match self.commit(key, attempt, run)? {
            Some(events) => Step::Done(Extracted::Now(events)),
            None => Step::NotYet,
        })
    }

    fn summary_record(&self, id: RecordId) -> Result<BlockSummary, DeriveError> {
        match self.store.get(&id)?.map(|s| s.record) {
            Some(Record::BlockSummary(s)) => Ok(s),
            _ => Err(DeriveError::Missing {
                kind: "summary",
                id,
            }),
        }
    }

    fn events(&self, ids: &[RecordId]) -> Result<Vec<(RecordId, Event)>, DeriveError> {
        ids.iter()
            .map(|id| match self.store.get(id)?.map(|s| s.record) {
                Some(Record::Event(e)) => Ok((*id, e)),
                _ => Err(DeriveError::Missing {
                    kind: "event",
                    id: *id,
                }),
            })
            .collect()
    }

    /// The timeline with every event read (those named by extractions done
    /// before are read now).
    fn read_timeline<'t>(
        &self,
        timeline: &'t mut Timeline,
    ) -> Result<&'t [(RecordId, Event)], DeriveError> {
        if !timeline.unread.is_empty() {
            let unread = std::mem::take(&mut timeline.unread);
            timeline.read.extend(self.events(&unread)?);
        }
        Ok(&timeline.read)
    }

    /// L2 key points of a block under this profile's summarizer, if summarized.
    fn key_points(&self, block: Option<&RecordId>) -> Result<Option<Vec<String>>, DeriveError> {
        let Some(block) = block else {
            return Ok(None);
        };
        let state = summary_state(self.store, self.ops, block)?;
        let Some(id) = state.done.and_then(|d| d.outputs.first().copied()) else {
            return Ok(None);
        };
        Ok(match self.store.get(&id)?.map(|s| s.record) {
            Some(Record::BlockSummary(s)) => Some(s.key_points),
            _ => None,
        })
    }

    /// The projection of a block's events (`ids`), read from the log when
    /// it must run and `events` does not hold them.
    fn projection(
        &mut self,
        tenant: &str,
        ids: &[RecordId],
        events: Option<&[(RecordId, Event)]>,
    ) -> Result<(), DeriveError> {
        let (Some(anchor), Some(state)) = (
            ids.first().copied(),
            projection_state(self.store, self.ops, ids)?,
        ) else {
            return Ok(());
        };
        if state.done.is_some() {
            return Ok(());
        }
        let key = StageKey::Projection(anchor);
        if !self.may_run(&key, state.failures) {
            return Ok(());
        }
        self.stats.runs += 1;
        let attempt = state.failures + 1;
        let read;
        let events = match events {
            Some(events) => events,
            None => {
                read = self.events(ids)?;
                &read
            }
        };
        let run = stage::project(self.ops, tenant, events, attempt)?;
        self.commit(key, attempt, run)?;
        Ok(())
    }
}
