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
//!
//! The storing pass runs on the staged runtime ([`crate::runtime`]): this
//! module reads in the calling thread and feeds it. The refuse policy's
//! first pass reads in the calling thread too, except over a JSONL file on
//! a machine with several cores, which `validator.rs` parses and
//! screens on all of them. With
//! operators in [`IngestOptions::operators`], every block is derived as it
//! seals; blocks the log holds underived (an earlier run without operators,
//! or a failed operator) are derived first by [`crate::derive`], and failed
//! runs are left to it afterwards.

use foldhash::HashSet;
use std::io::Write;
use std::sync::Arc;

use strataflow_log::record::RecordKind;
use strataflow_log::{Durability, Store};
use strataflow_operators::profile::Operators;
use strataflow_operators::sealer::Sealer;

use crate::commit_observer::CommitObserver;
use crate::log_seam::LogSink;
use crate::runtime::{self, RuntimeOptions};
use crate::source::jsonl::JsonlChunks;
use crate::source::{Rejected, SourceError, SourceItem};
use crate::validator::{Checked, VALIDATE_PROGRESS_EVERY, Validator, message_key};

/// Default number of records per committed batch.
pub const DEFAULT_BATCH_RECORDS: usize = 4096;

pub use crate::ingest_report::{IngestError, IngestStats, MAX_LISTED_ERRORS};

/// What to do with bad input.
pub enum OnInvalid<'w> {
    /// Store nothing and report every problem.
    Refuse,
    /// Store the valid items; write the rejected ones here as JSONL.
    Quarantine(&'w mut dyn Write),
}

/// Settings of an ingest run.
#[derive(Clone)]
pub struct IngestOptions {
    /// Durability of each committed batch.
    pub durability: Durability,
    /// Records per committed batch (a batch is cut at the first chunk
    /// boundary past this many records, or when the writer has caught up).
    pub batch_records: usize,
    /// The sealer of the data directory.
    pub sealer: Sealer,
    /// Worker threads (default: the machine's cores).
    pub workers: usize,
    /// Operators deriving every block as it seals; `None` stores messages
    /// and blocks only.
    pub operators: Option<Operators>,
    /// Told of every batch the run commits (see [`CommitObserver`]).
    pub observer: Option<Arc<dyn CommitObserver>>,
}

impl Default for IngestOptions {
    fn default() -> Self {
        Self {
            durability: Durability::Sync,
            batch_records: DEFAULT_BATCH_RECORDS,
            sealer: Sealer::default(),
            workers: default_workers(),
            operators: None,
            observer: None,
        }
    }
}

/// The machine's cores (1 if unknown).
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// A source the ingest can read more than once (the refuse policy reads twice).
pub trait Source {
    /// A fresh pass over the items.
    fn items(
        &self,
    ) -> Result<Box<dyn Iterator<Item = Result<SourceItem, SourceError>> + '_>, SourceError>;

    /// Called by the refuse policy before its first pass: a second pass
    /// follows a valid input, so a source that is costly to read may keep
    /// what the first pass read for it (an export spools its messages).
    /// Either pass must yield the same items. By default, nothing.
    fn expect_second_pass(&self) {}

    /// The source as chunks of whole JSONL lines, when it is a JSONL file:
    /// the refuse policy's first pass then parses and screens them on
    /// several threads (`validator.rs`). `None` by default.
    fn jsonl_chunks(&self) -> Option<Result<JsonlChunks, SourceError>> {
        None
    }
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
    let runtime = RuntimeOptions {
        workers: options.workers.max(1),
        group_records: options.batch_records.max(1),
        durability: options.durability,
        sealer: options.sealer,
        operators: options.operators.clone(),
        observer: options.observer.clone(),
    };
    match on_invalid {
        OnInvalid::Refuse => {
            source.expect_second_pass();
            let checked = validate(Some(store), None, source, progress)?;
            catch_up(store, options, progress)?;
            runtime::run(store, &runtime, progress, |feeder| {
                feeder.reader.expected = checked.items;
                store_pass(source, &checked.repeated, feeder)
            })
        }
        OnInvalid::Quarantine(rejects) => {
            catch_up(store, options, progress)?;
            runtime::run(store, &runtime, progress, |feeder| {
                quarantine_pass(Some(store), source, rejects, feeder)
            })
        }
    }
}

/// Ingests a source into another log behind the seam (a distributed log's
/// publisher): the same validation and policies as [`ingest`], with the
/// sink's [`LogSink::known`] standing for the store's checks. The sink
/// sees each valid message once, in input order.
pub fn ingest_into(
    sink: &mut dyn LogSink,
    source: &dyn Source,
    on_invalid: OnInvalid<'_>,
    progress: &mut dyn FnMut(&IngestStats),
) -> Result<(), IngestError> {
    match on_invalid {
        OnInvalid::Refuse => {
            source.expect_second_pass();
            let checked = validate(None, Some(&mut *sink), source, progress)?;
            sink.counters().expected = checked.items;
            store_pass(source, &checked.repeated, sink)
        }
        OnInvalid::Quarantine(rejects) => quarantine_pass(None, source, rejects, sink),
    }
}

/// The refuse policy's first pass: every item read and checked (against
/// the store, or the sink's log); any problem refuses the whole input.
pub(crate) fn validate(
    store: Option<&Store>,
    mut sink: Option<&mut dyn LogSink>,
    source: &dyn Source,
    progress: &mut dyn FnMut(&IngestStats),
) -> Result<Checked, IngestError> {
    let threads = default_workers();
    if let (Some(store), None, true) = (store, sink.as_ref(), threads > 1)
        && let Some(chunks) = source.jsonl_chunks()
    {
        return crate::validator::validate_jsonl(store, chunks?, source, threads, progress);
    }
    let mut validator = Validator::default();
    let mut errors = Vec::new();
    let mut total = 0u64;
    let mut checked = IngestStats {
        stage: "validate",
        ..IngestStats::default()
    };
    for item in source.items()? {
        checked.expected += 1;
        if checked.expected.is_multiple_of(VALIDATE_PROGRESS_EVERY) {
            progress(&checked);
        }
        let problem = match item? {
            Err(rejected) => Some(rejected.error),
            Ok(input) => match validator.check(store, &input)? {
                Err(e) => Some(e),
                Ok(()) => match sink.as_deref_mut() {
                    Some(sink) => sink.known(&input)?.err(),
                    None => None,
                },
            },
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
    tracing::info!(items = checked.expected, "input validated");
    Ok(Checked {
        items: checked.expected,
        repeated: validator.repeated_keys,
    })
}

/// The refuse policy's storing pass: the first pass found no conflict, so
/// this only skips repeats, by key: the later occurrences of the `repeated`
/// keys (and what the sink's log holds).
fn store_pass(
    source: &dyn Source,
    repeated: &HashSet<u128>,
    sink: &mut dyn LogSink,
) -> Result<(), IngestError> {
    sink.counters().stage = "ingest";
    let mut seen: HashSet<u128> = HashSet::default();
    for item in source.items()? {
        let input = match item? {
            Ok(input) => input,
            // The input changed between the passes.
            Err(rejected) => {
                return Err(IngestError::Refused {
                    errors: vec![rejected.error],
                    total: 1,
                });
            }
        };
        sink.counters().read += 1;
        if !repeated.is_empty() {
            let key = message_key(&input);
            if repeated.contains(&key) && !seen.insert(key) {
                sink.counters().already_stored += 1;
                continue;
            }
        }
        sink.accept(input)?;
    }
    Ok(())
}

/// The quarantine policy's one pass: bad items to the rejects file, the
/// valid ones to the sink.
fn quarantine_pass(
    store: Option<&Store>,
    source: &dyn Source,
    rejects: &mut dyn Write,
    sink: &mut dyn LogSink,
) -> Result<(), IngestError> {
    sink.counters().stage = "ingest";
    let mut validator = Validator::default();
    for item in source.items()? {
        let checked = match item? {
            Err(rejected) => Err(rejected),
            Ok(input) => match validator.check(store, &input)? {
                Ok(()) => match sink.known(&input)? {
                    Ok(_) => Ok(input),
                    Err(error) => Err(Rejected {
                        input: input.to_json(),
                        error,
                    }),
                },
                Err(error) => Err(Rejected {
                    input: input.to_json(),
                    error,
                }),
            },
        };
        match checked {
            Ok(input) => {
                sink.counters().read += 1;
                if validator.repeated {
                    sink.counters().already_stored += 1;
                    continue;
                }
                sink.accept(input)?;
            }
            Err(rejected) => {
                write_reject(rejects, &rejected).map_err(IngestError::Rejects)?;
                sink.counters().rejected += 1;
            }
        }
    }
    rejects.flush().map_err(IngestError::Rejects)
}

/// Derives the blocks the log holds underived before new ones are derived
/// inline (so each thread's extraction context is complete). Nothing to do
/// on a store without blocks.
fn catch_up(
    store: &Store,
    options: &IngestOptions,
    progress: &mut dyn FnMut(&IngestStats),
) -> Result<(), IngestError> {
    let Some(ops) = &options.operators else {
        return Ok(());
    };
    if store.count(RecordKind::Block)? == 0 {
        return Ok(());
    }
    let derive_options = crate::derive::DeriveOptions {
        durability: options.durability,
        ..crate::derive::DeriveOptions::default()
    };
    progress(&IngestStats {
        stage: "derive",
        ..IngestStats::default()
    });
    crate::derive::derive(store, ops, &derive_options, &mut |_| {})?;
    Ok(())
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
