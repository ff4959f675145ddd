//! Ingest: messages from a source into the log, sealing blocks as turns
//! complete.
//!
//! Two policies for bad input ([`OnInvalid`]):
//! - `Refuse` (default): a first pass reads and validates everything; if any
//!   item is bad, nothing is stored and every problem is reported (file,
//!   line, field). A second pass stores.
//! - `Quarantine`: one pass; bad items go to a rejects file with their
//!   reasons and the valid ones are stored.
//!
//! Ingest is idempotent and resumable: a message whose external id is already
//! in its thread is skipped (and must have the same content), positions
//! continue from the thread head, and blocks depend only on message order, so
//! a run killed at any point and started again ends with exactly the records
//! of an uninterrupted run.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use strataflow_log::envelope::encode_with_id;
use strataflow_log::record::{Message, Record, RecordKind};
use strataflow_log::{Durability, RecordId, Store, StoreError};
use strataflow_operators::sealer::{Sealer, ThreadCursor};

use crate::source::{InputError, MessageInput, Rejected, SourceError, SourceItem};

/// Default number of records per committed batch.
pub const DEFAULT_BATCH_RECORDS: usize = 4096;

/// How many input problems a refusal lists (the total is always given).
pub const MAX_LISTED_ERRORS: usize = 20;

/// Error of an ingest run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The source could not be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The log refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Bad input, nothing stored.
    #[error("{}", refusal_text(errors, *total))]
    Refused {
        /// The first problems, in input order.
        errors: Vec<InputError>,
        /// How many items were bad.
        total: u64,
    },
    /// The rejects file could not be written.
    #[error("cannot write the rejects file: {0}")]
    Rejects(#[source] std::io::Error),
}

fn refusal_text(errors: &[InputError], total: u64) -> String {
    let mut text = format!(
        "refused: {total} invalid input item{}; nothing was stored (use --skip-invalid FILE to store the valid ones)",
        if total == 1 { "" } else { "s" }
    );
    for e in errors {
        text.push_str("\n  ");
        text.push_str(&e.to_string());
    }
    let listed = u64::try_from(errors.len()).unwrap_or(u64::MAX);
    if total > listed {
        text.push_str(&format!("\n  … and {} more", total - listed));
    }
    text
}

/// What to do with bad input.
pub enum OnInvalid<'w> {
    /// Store nothing and report every problem.
    Refuse,
    /// Store the valid items; write the rejected ones here as JSONL.
    Quarantine(&'w mut dyn Write),
}

/// Settings of an ingest run.
#[derive(Clone, Debug)]
pub struct IngestOptions {
    /// Durability of each committed batch.
    pub durability: Durability,
    /// Records per committed batch.
    pub batch_records: usize,
    /// The sealer of the data directory.
    pub sealer: Sealer,
}

impl Default for IngestOptions {
    fn default() -> Self {
        Self {
            durability: Durability::Sync,
            batch_records: DEFAULT_BATCH_RECORDS,
            sealer: Sealer::default(),
        }
    }
}

/// Counters of an ingest run.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct IngestStats {
    /// Valid messages read in the storing pass.
    pub read: u64,
    /// Messages written.
    pub stored: u64,
    /// Messages already in the log (or repeated in the input), skipped.
    pub already_stored: u64,
    /// Items rejected (quarantine mode).
    pub rejected: u64,
    /// Blocks sealed.
    pub blocks_sealed: u64,
    /// Threads touched.
    pub threads: u64,
    /// Batches committed.
    pub batches: u64,
}

/// A source the ingest can read more than once (the refuse policy reads twice).
pub trait Source {
    /// A fresh pass over the items.
    fn items(
        &self,
    ) -> Result<Box<dyn Iterator<Item = Result<SourceItem, SourceError>> + '_>, SourceError>;
}

impl Source for Vec<SourceItem> {
    fn items(
        &self,
    ) -> Result<Box<dyn Iterator<Item = Result<SourceItem, SourceError>> + '_>, SourceError> {
        Ok(Box::new(self.iter().cloned().map(Ok)))
    }
}

/// Ingests a source into the store under a bad-input policy. `progress` is
/// called after every committed batch.
pub fn ingest(
    store: &Store,
    source: &dyn Source,
    options: &IngestOptions,
    on_invalid: OnInvalid<'_>,
    progress: &mut dyn FnMut(&IngestStats),
) -> Result<IngestStats, IngestError> {
    let mut validator = Validator::default();
    match on_invalid {
        OnInvalid::Refuse => {
            let mut errors = Vec::new();
            let mut total = 0u64;
            for item in source.items()? {
                let problem = match item? {
                    Err(rejected) => Some(rejected.error),
                    Ok(input) => validator.check(store, &input)?.err(),
                };
                if let Some(e) = problem {
                    total += 1;
                    if errors.len() < MAX_LISTED_ERRORS {
                        errors.push(e);
                    }
                }
            }
            if total > 0 {
                return Err(IngestError::Refused { errors, total });
            }
            let mut writer = Writer::new(store, options, progress);
            for item in source.items()? {
                match item? {
                    Ok(input) => writer.push(input)?,
                    Err(rejected) => {
                        // The input changed between the passes.
                        return Err(IngestError::Refused {
                            errors: vec![rejected.error],
                            total: 1,
                        });
                    }
                }
            }
            writer.finish()
        }
        OnInvalid::Quarantine(rejects) => {
            let mut writer = Writer::new(store, options, progress);
            for item in source.items()? {
                let checked = match item? {
                    Err(rejected) => Err(rejected),
                    Ok(input) => match validator.check(store, &input)? {
                        Ok(()) => Ok(input),
                        Err(error) => Err(Rejected {
                            input: input.to_json(),
                            error,
                        }),
                    },
                };
                match checked {
                    Ok(input) => writer.push(input)?,
                    Err(rejected) => {
                        write_reject(rejects, &rejected).map_err(IngestError::Rejects)?;
                        writer.stats.rejected += 1;
                    }
                }
            }
            rejects.flush().map_err(IngestError::Rejects)?;
            writer.finish()
        }
    }
}

fn write_reject(out: &mut dyn Write, rejected: &Rejected) -> std::io::Result<()> {
    let e = &rejected.error;
    let line = serde_json::json!({
        "file": e.location.file,
        "line": e.location.line,
        "path": e.location.path,
        "field": e.field,
        "problem": e.problem,
        "error": e.to_string(),
        "input": rejected.input,
    });
    writeln!(out, "{line}")
}

/// Finds conflicting duplicates: an external id seen twice with different
/// content, in the input or against the log.
#[derive(Default)]
struct Validator {
    seen: HashMap<(String, String, String), RecordId>,
}

impl Validator {
    fn check(
        &mut self,
        store: &Store,
        input: &MessageInput,
    ) -> Result<Result<(), InputError>, StoreError> {
        let fingerprint = content_fingerprint(input)?;
        let key = (
            input.tenant.clone(),
            input.thread.clone(),
            input.external_id.clone(),
        );
        if let Some(earlier) = self.seen.get(&key) {
            if *earlier != fingerprint {
                return Ok(Err(InputError::field(
                    &input.location,
                    "id",
                    format!(
                        "`{}` appears earlier in thread `{}` with different content",
                        input.external_id, input.thread
                    ),
                )));
            }
            return Ok(Ok(()));
        }
        if let Some(id) =
            store.message_by_external_id(&input.tenant, &input.thread, &input.external_id)?
        {
            let same = match store.get(&id)? {
                Some(stored) => {
                    matches!(&stored.record, Record::Message(m) if input.same_content_as(m))
                }
                None => false,
            };
            if !same {
                return Ok(Err(InputError::field(
                    &input.location,
                    "id",
                    format!(
                        "`{}` is already stored in thread `{}` with different content (record {id})",
                        input.external_id, input.thread
                    ),
                )));
            }
        }
        self.seen.insert(key, fingerprint);
        Ok(Ok(()))
    }
}

/// A hash of everything in a message but its position.
fn content_fingerprint(input: &MessageInput) -> Result<RecordId, StoreError> {
    Ok(encode_with_id(&Record::Message(input.to_message(0)))?.0)
}

/// The sealing state of one thread.
struct ThreadState {
    next_position: u64,
    cursor: ThreadCursor,
    tail: Vec<(RecordId, Message)>,
}

/// Appends messages and the blocks they complete, in batches.
struct Writer<'a> {
    store: &'a Store,
    options: &'a IngestOptions,
    progress: &'a mut dyn FnMut(&IngestStats),
    threads: HashMap<(String, String), ThreadState>,
    batch: Vec<Record>,
    batch_keys: HashSet<(String, String, String)>,
    stats: IngestStats,
}

impl<'a> Writer<'a> {
    fn new(
        store: &'a Store,
        options: &'a IngestOptions,
        progress: &'a mut dyn FnMut(&IngestStats),
    ) -> Self {
        Self {
            store,
            options,
            progress,
            threads: HashMap::new(),
            batch: Vec::new(),
            batch_keys: HashSet::new(),
            stats: IngestStats::default(),
        }
    }

    fn push(&mut self, input: MessageInput) -> Result<(), IngestError> {
        self.stats.read += 1;
        let thread_key = (input.tenant.clone(), input.thread.clone());
        if !self.threads.contains_key(&thread_key) {
            let state = self.load_thread(&input.tenant, &input.thread)?;
            self.threads.insert(thread_key.clone(), state);
            self.stats.threads += 1;
        }
        let key = (
            input.tenant.clone(),
            input.thread.clone(),
            input.external_id.clone(),
        );
        if self.batch_keys.contains(&key)
            || self
                .store
                .message_by_external_id(&input.tenant, &input.thread, &input.external_id)?
                .is_some()
        {
            self.stats.already_stored += 1;
            return Ok(());
        }
        let Some(state) = self.threads.get_mut(&thread_key) else {
            return Ok(());
        };
        let message = input.to_message(state.next_position);
        state.next_position += 1;
        let record = Record::Message(message.clone());
        let (id, _) = encode_with_id(&record).map_err(StoreError::from)?;
        self.batch.push(record);
        self.batch_keys.insert(key);
        state.tail.push((id, message));
        let sealed = seal(&self.options.sealer, state);
        self.stats.blocks_sealed += sealed.len() as u64;
        self.batch.extend(sealed);
        if self.batch.len() >= self.options.batch_records {
            self.flush()?;
        }
        Ok(())
    }

    /// Reads a thread's head and open tail from the log, sealing whatever a
    /// crash may have left sealable.
    fn load_thread(&mut self, tenant: &str, thread: &str) -> Result<ThreadState, IngestError> {
        let head = self.store.thread_head(tenant, thread)?.unwrap_or_default();
        let mut tail = Vec::new();
        for entry in self.store.thread_records(tenant, thread, 0).rev() {
            let (_, kind, id) = entry?;
            if kind != RecordKind::Message {
                continue;
            }
            let Some(stored) = self.store.get(&id)? else {
                continue;
            };
            let Record::Message(m) = stored.record else {
                continue;
            };
            if m.position < head.sealed_messages {
                break;
            }
            tail.push((id, m));
        }
        tail.reverse();
        let mut state = ThreadState {
            next_position: head.messages,
            cursor: ThreadCursor {
                next_ordinal: head.blocks + 1,
                next_turn: head.end_turn + 1,
            },
            tail,
        };
        let sealed = seal(&self.options.sealer, &mut state);
        self.stats.blocks_sealed += sealed.len() as u64;
        self.batch.extend(sealed);
        Ok(state)
    }

    fn flush(&mut self) -> Result<(), IngestError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let receipt = self.store.append(&self.batch, self.options.durability)?;
        for (record, appended) in self.batch.iter().zip(&receipt.records) {
            if appended.new && record.kind() == RecordKind::Message {
                self.stats.stored += 1;
            }
        }
        self.stats.batches += 1;
        self.batch.clear();
        self.batch_keys.clear();
        (self.progress)(&self.stats);
        Ok(())
    }

    fn finish(mut self) -> Result<IngestStats, IngestError> {
        self.flush()?;
        Ok(self.stats)
    }
}

/// Seals the complete blocks at the front of a thread's tail.
fn seal(sealer: &Sealer, state: &mut ThreadState) -> Vec<Record> {
    let tail: Vec<(RecordId, &Message)> = state.tail.iter().map(|(id, m)| (*id, m)).collect();
    let blocks = sealer.seal(state.cursor, &tail);
    let Some(last) = blocks.last() else {
        return Vec::new();
    };
    state.cursor = ThreadCursor {
        next_ordinal: last.ordinal + 1,
        next_turn: last.end_turn + 1,
    };
    let sealed_through = last.last_position;
    state.tail.retain(|(_, m)| m.position > sealed_through);
    blocks.into_iter().map(Record::Block).collect()
}
