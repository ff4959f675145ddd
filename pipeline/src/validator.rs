//! The refuse policy's checks of an input, and its first pass over a JSONL
//! file on several threads.
//!
//! An item is checked in two steps:
//!
//! 1. `screen`: what the item says on its own and against the log (a
//!    reserved thread name; an external id the log holds in the thread with
//!    other content). Independent of the other items, so any thread may
//!    screen any item.
//! 2. `Validator::admit`: against the items before it, in input order
//!    (an external id given earlier in the thread with other content is a
//!    conflict; with the same content, a repeat the storing pass skips).
//!
//! The first pass over a JSONL file (`validate_jsonl`) reads it as chunks
//! of whole lines, parses and screens the chunks on several threads, and
//! admits their items on the calling thread, in input order: the same
//! errors, in the same order, as reading it line by line.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashSet};
use strataflow_log::record::Record;
use strataflow_log::{Store, StoreError};

use crate::field_hash::FieldHash;

use crate::ingest::{IngestError, IngestStats, MAX_LISTED_ERRORS, Source};
use crate::ingest_report::WorkerFailure;
use crate::source::jsonl::{JsonlChunk, JsonlChunks};
use crate::source::{InputError, MessageInput, SourceError};

/// What [`screen`] found of an item.
pub(crate) enum Screened {
    /// Refused on its own.
    Refused(InputError),
    /// Valid on its own.
    Valid {
        /// [`message_key`].
        key: u128,
        /// [`content_fingerprint`].
        fingerprint: u128,
        /// Its conflict with the log, if any: refused unless it repeats an
        /// earlier item (which was refused for it already).
        against_log: Option<InputError>,
    },
}

/// Why [`Validator::admit`] refuses an item.
pub(crate) enum Refusal {
    /// The item's own problem.
    Problem(InputError),
    /// Its external id appears earlier in its thread with other content
    /// ([`conflict`] names it).
    Conflict,
}

/// Threads of the log, looked up once each: tenant → thread → whether the
/// log held messages of it before the run (nested, so that a lookup
/// borrows the names).
#[derive(Default)]
pub(crate) struct StoredThreads(HashMap<String, HashMap<String, bool>>);

impl StoredThreads {
    fn holds(&mut self, store: &Store, input: &MessageInput) -> Result<bool, StoreError> {
        let known = self
            .0
            .get(input.tenant.as_str())
            .and_then(|threads| threads.get(input.thread.as_str()))
            .copied();
        if let Some(known) = known {
            return Ok(known);
        }
        let known = store
            .thread_head(&input.tenant, &input.thread)?
            .is_some_and(|h| h.messages > 0);
        self.0
            .entry(input.tenant.clone())
            .or_default()
            .insert(input.thread.clone(), known);
        Ok(known)
    }
}

/// Step 1: the item on its own and against the log (`store`; none when a
/// sink's log stands for it).
pub(crate) fn screen(
    store: Option<&Store>,
    stored: &mut StoredThreads,
    input: &MessageInput,
) -> Result<Screened, StoreError> {
    if input
        .thread
        .starts_with(strataflow_log::record::EXTERNAL_IMPORT_THREAD_PREFIX)
    {
        return Ok(Screened::Refused(InputError::field(
            &input.location,
            "thread",
            format!(
                "thread `{}`: names starting with `{}` are reserved for external memory imports",
                input.thread,
                strataflow_log::record::EXTERNAL_IMPORT_THREAD_PREFIX
            ),
        )));
    }
    let against_log = match store {
        Some(store) if stored.holds(store, input)? => against_log(store, input)?,
        _ => None,
    };
    Ok(Screened::Valid {
        key: message_key(input),
        fingerprint: content_fingerprint(input),
        against_log,
    })
}

/// The conflict of an input with the message the log holds under its
/// external id, if any.
fn against_log(store: &Store, input: &MessageInput) -> Result<Option<InputError>, StoreError> {
    let Some(id) =
        store.message_by_external_id(&input.tenant, &input.thread, &input.external_id)?
    else {
        return Ok(None);
    };
    let same = match store.get(&id)? {
        Some(stored) => matches!(&stored.record, Record::Message(m) if input.same_content_as(m)),
        None => false,
    };
    Ok((!same).then(|| {
        InputError::field(
            &input.location,
            "id",
            format!(
                "`{}` is already stored in thread `{}` with different content (record {id})",
                input.external_id, input.thread
            ),
        )
    }))
}

/// The error of an input whose external id appears earlier in its thread
/// with other content.
pub(crate) fn conflict(input: &MessageInput) -> InputError {
    InputError::field(
        &input.location,
        "id",
        format!(
            "`{}` appears earlier in thread `{}` with different content",
            input.external_id, input.thread
        ),
    )
}

/// Finds conflicting duplicates: an external id seen twice with different
/// content, in the input or against the log.
/// Keys are 128-bit hashes of (tenant, thread, external id), so memory is a
/// few dozen bytes per distinct message; the store is consulted only for
/// threads it already holds.
#[derive(Default)]
pub(crate) struct Validator {
    seen: HashMap<u128, u128>,
    stored: StoredThreads,
    /// The last checked input repeats an earlier one of the input (same
    /// content): the runtime skips it.
    pub(crate) repeated: bool,
    /// The keys of every input repeated so far.
    pub(crate) repeated_keys: HashSet<u128>,
}

impl Validator {
    /// Both steps for one input, read in order.
    pub(crate) fn check(
        &mut self,
        store: Option<&Store>,
        input: &MessageInput,
    ) -> Result<Result<(), InputError>, StoreError> {
        let screened = screen(store, &mut self.stored, input)?;
        Ok(self.admit(screened).map_err(|refusal| match refusal {
            Refusal::Problem(e) => e,
            Refusal::Conflict => conflict(input),
        }))
    }

    /// Step 2: a screened item against the items admitted before it.
    pub(crate) fn admit(&mut self, screened: Screened) -> Result<(), Refusal> {
        self.repeated = false;
        let (key, fingerprint, against_log) = match screened {
            Screened::Refused(e) => return Err(Refusal::Problem(e)),
            Screened::Valid {
                key,
                fingerprint,
                against_log,
            } => (key, fingerprint, against_log),
        };
        if let Some(earlier) = self.seen.get(&key) {
            if *earlier != fingerprint {
                return Err(Refusal::Conflict);
            }
            self.repeated = true;
            self.repeated_keys.insert(key);
            return Ok(());
        }
        if let Some(e) = against_log {
            return Err(Refusal::Problem(e));
        }
        self.seen.insert(key, fingerprint);
        Ok(())
    }
}

/// What the first pass found in a valid input.
pub(crate) struct Checked {
    /// Items read.
    pub(crate) items: u64,
    /// Keys ([`message_key`]) of the messages the input holds more than once
    /// (with the same content): the storing pass keeps the first of each.
    /// Usually empty, so that pass remembers no key of the others: its
    /// memory does not grow with the input.
    pub(crate) repeated: HashSet<u128>,
}

/// The validation pass reports progress every this many items.
pub(crate) const VALIDATE_PROGRESS_EVERY: u64 = 65_536;

/// Screening threads of [`validate_jsonl`] at most.
const MAX_SCREENING_THREADS: usize = 4;

/// One screened item of a chunk, with its line (to name a conflict).
type ScreenedItem = (Screened, Option<usize>);

/// A refusal listed in the report, in input order: ready, or a conflict
/// named once the pass is over.
enum Listed {
    Ready(InputError),
    ConflictAt(Option<usize>),
}

/// The refuse policy's first pass over a JSONL file, checked against
/// `store`: `threads` threads (at least 2) parse and screen its chunks,
/// this one admits their items in order. `source` is the same file, read
/// again only to name the conflicts between items it lists.
pub(crate) fn validate_jsonl(
    store: &Store,
    chunks: JsonlChunks,
    source: &dyn Source,
    threads: usize,
    progress: &mut dyn FnMut(&IngestStats),
) -> Result<Checked, IngestError> {
    let threads = threads.clamp(2, MAX_SCREENING_THREADS);
    let file = chunks.file().to_owned();
    let mut validator = Validator::default();
    let mut listed: Vec<Listed> = Vec::new();
    let mut total = 0u64;
    let mut checked = IngestStats {
        stage: "validate",
        ..IngestStats::default()
    };
    let outcome = std::thread::scope(|scope| -> Result<(), IngestError> {
        let (screened_tx, screened_rx) =
            crossbeam_channel::bounded::<Result<(u64, Vec<ScreenedItem>), StoreError>>(2 * threads);
        let spawn_failed = |e: std::io::Error| IngestError::Worker(WorkerFailure::Spawn(e));
        let mut inputs = Vec::with_capacity(threads);
        for t in 0..threads {
            let (tx, rx) = crossbeam_channel::bounded::<(u64, JsonlChunk)>(2);
            inputs.push(tx);
            let screened_tx = screened_tx.clone();
            let file = file.as_str();
            std::thread::Builder::new()
                .name(format!("strataflow-screen-{t}"))
                .spawn_scoped(scope, move || {
                    let mut stored = StoredThreads::default();
                    for (k, chunk) in rx {
                        let result = screen_chunk(store, &mut stored, file, &chunk).map(|s| (k, s));
                        let failed = result.is_err();
                        if screened_tx.send(result).is_err() || failed {
                            break;
                        }
                    }
                })
                .map_err(spawn_failed)?;
        }
        drop(screened_tx);
        let reader = std::thread::Builder::new()
            .name("strataflow-chunks".into())
            .spawn_scoped(scope, move || -> Result<(), SourceError> {
                for (k, chunk) in (0u64..).zip(chunks) {
                    let chunk = chunk?;
                    let Some(to) = usize::try_from(k % inputs.len() as u64)
                        .ok()
                        .and_then(|i| inputs.get(i))
                    else {
                        break;
                    };
                    if to.send((k, chunk)).is_err() {
                        // A screening thread stopped: its error is reported.
                        break;
                    }
                }
                Ok(())
            })
            .map_err(spawn_failed)?;
        // Chunks screened out of order wait here for the ones before them.
        let mut waiting: BTreeMap<u64, Vec<ScreenedItem>> = BTreeMap::new();
        let mut next = 0u64;
        for result in screened_rx {
            let (k, items) = result?;
            waiting.insert(k, items);
            while let Some(items) = waiting.remove(&next) {
                next += 1;
                for (screened, line) in items {
                    checked.expected += 1;
                    if checked.expected.is_multiple_of(VALIDATE_PROGRESS_EVERY) {
                        progress(&checked);
                    }
                    let Err(refusal) = validator.admit(screened) else {
                        continue;
                    };
                    total += 1;
                    if listed.len() < MAX_LISTED_ERRORS {
                        listed.push(match refusal {
                            Refusal::Problem(e) => Listed::Ready(e),
                            Refusal::Conflict => Listed::ConflictAt(line),
                        });
                    }
                }
            }
        }
        match reader.join() {
            Ok(read) => read.map_err(IngestError::from),
            Err(_) => Err(IngestError::Worker(WorkerFailure::WorkerPanicked)),
        }
    });
    outcome?;
    if total > 0 {
        let errors = name_conflicts(source, listed)?;
        return Err(IngestError::Refused { errors, total });
    }
    tracing::info!(items = checked.expected, threads, "input validated");
    Ok(Checked {
        items: checked.expected,
        repeated: validator.repeated_keys,
    })
}

/// Parses and screens a chunk's items.
fn screen_chunk(
    store: &Store,
    stored: &mut StoredThreads,
    file: &str,
    chunk: &JsonlChunk,
) -> Result<Vec<ScreenedItem>, StoreError> {
    chunk
        .items(file)
        .map(|item| match item {
            Err(rejected) => Ok((Screened::Refused(rejected.error), None)),
            Ok(input) => screen(Some(store), stored, &input).map(|s| (s, input.location.line)),
        })
        .collect()
}

/// The listed refusals as errors: each conflict named from its line, read
/// again from `source`.
fn name_conflicts(
    source: &dyn Source,
    listed: Vec<Listed>,
) -> Result<Vec<InputError>, IngestError> {
    let lines: HashSet<usize> = listed
        .iter()
        .filter_map(|l| match l {
            Listed::ConflictAt(line) => *line,
            Listed::Ready(_) => None,
        })
        .collect();
    let mut named: HashMap<usize, InputError> = HashMap::default();
    if !lines.is_empty() {
        for item in source.items()? {
            if let Ok(Ok(input)) = item
                && let Some(line) = input.location.line
                && lines.contains(&line)
            {
                named.insert(line, conflict(&input));
                if named.len() == lines.len() {
                    break;
                }
            }
        }
    }
    Ok(listed
        .into_iter()
        .filter_map(|l| match l {
            Listed::Ready(e) => Some(e),
            Listed::ConflictAt(line) => line.and_then(|line| named.remove(&line)),
        })
        .collect())
}

/// A hash of everything in a message but its position (the fields
/// [`MessageInput::same_content_as`] compares), length-prefixed.
fn content_fingerprint(input: &MessageInput) -> u128 {
    static CONTENT_KEY: std::sync::LazyLock<blake3::Hasher> = std::sync::LazyLock::new(|| {
        blake3::Hasher::new_derive_key("strataflow ingest message content v1")
    });
    const NONE: &str = "\u{0}none";
    let speaker = input.speaker.as_deref().unwrap_or(NONE);
    // Room for the usual message (the buffer grows for a longer one).
    let mut fields = FieldHash::with_capacity(input.content.len() + 256);
    fields
        .field(input.tenant.as_bytes())
        .field(input.thread.as_bytes())
        .field(input.external_id.as_bytes())
        .field(input.role.as_str().as_bytes())
        .field(speaker.as_bytes())
        .field(input.content.as_bytes())
        .field(&input.time.utc_ms.to_le_bytes())
        .field(
            &input
                .time
                .offset_minutes
                .map_or(i32::MIN, i32::from)
                .to_le_bytes(),
        );
    for call in &input.tool_calls {
        fields
            .field(call.name.as_bytes())
            .field(call.arguments.as_deref().unwrap_or(NONE).as_bytes())
            .field(call.result.as_deref().unwrap_or(NONE).as_bytes());
    }
    fields.hash(&CONTENT_KEY)
}

/// A 128-bit hash of a message's (tenant, thread, external id).
pub(crate) fn message_key(input: &MessageInput) -> u128 {
    static MESSAGE_KEY: std::sync::LazyLock<blake3::Hasher> = std::sync::LazyLock::new(|| {
        blake3::Hasher::new_derive_key("strataflow ingest message key v1")
    });
    let mut fields = FieldHash::with_capacity(
        24 + input.tenant.len() + input.thread.len() + input.external_id.len(),
    );
    fields
        .field(input.tenant.as_bytes())
        .field(input.thread.as_bytes())
        .field(input.external_id.as_bytes());
    fields.hash(&MESSAGE_KEY)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use std::io::Write as _;
    use std::path::{Path, PathBuf};

    use proptest::prelude::*;

    use super::*;
    use crate::ingest::{IngestOptions, OnInvalid, ingest, validate};
    use crate::source::SourceItem;
    use crate::source::jsonl::JsonlReader;

    /// A JSONL file read line by line only: the one-thread first pass.
    struct Lines(PathBuf);

    impl Source for Lines {
        fn items(
            &self,
        ) -> Result<Box<dyn Iterator<Item = Result<SourceItem, SourceError>> + '_>, SourceError>
        {
            Ok(Box::new(JsonlReader::open(&self.0)?))
        }
    }

    /// A line of the generated files: a message of 3 threads × 4 ids × 2
    /// contents (repeats and conflicts), a line that is not JSON, a blank
    /// line, a reserved thread, a line ended by CRLF.
    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => (0..3u8, 0..4u8, 0..2u8).prop_map(|(t, id, c)| format!(
                r#"{{"thread":"t{t}","id":"m{id}","role":"user","content":"c{c}","ts":"2024-03-01T09:30:00Z"}}"#
            )),
            1 => Just("{not json".to_owned()),
            1 => Just(String::new()),
            1 => Just(r#"{"thread":"external-import:x","id":"1","role":"user","content":"c","ts":"2024-03-01T09:30:00Z"}"#.to_owned()),
            1 => (0..3u8).prop_map(|t| format!(
                "{{\"thread\":\"t{t}\",\"id\":\"m9\",\"role\":\"assistant\",\"content\":\"crlf\",\"ts\":\"2024-03-01T09:30:00Z\"}}\r"
            )),
        ]
    }

    fn write(path: &Path, lines: &[String], last_newline: bool) {
        let mut f = std::fs::File::create(path).unwrap();
        for (i, l) in lines.iter().enumerate() {
            f.write_all(l.as_bytes()).unwrap();
            if i + 1 < lines.len() || last_newline {
                f.write_all(b"\n").unwrap();
            }
        }
    }

    /// What a first pass gave, comparable: the items and repeated keys, or
    /// the listed errors and the count.
    fn outcome(
        result: Result<Checked, IngestError>,
    ) -> Result<(u64, Vec<u128>), (Vec<String>, u64)> {
        match result {
            Ok(checked) => {
                let mut repeated: Vec<u128> = checked.repeated.into_iter().collect();
                repeated.sort_unstable();
                Ok((checked.items, repeated))
            }
            Err(IngestError::Refused { errors, total }) => {
                Err((errors.iter().map(ToString::to_string).collect(), total))
            }
            Err(other) => panic!("{other}"),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Chunks of any size screened on several threads give what
        /// reading line by line gives: the same items and repeats, or the
        /// same errors in the same order, against a log that holds some of
        /// the messages with other content.
        #[test]
        fn the_threaded_pass_equals_the_line_by_line_pass(
            stored in prop::collection::vec(line(), 0..6),
            lines in prop::collection::vec(line(), 0..40),
            last_newline in any::<bool>(),
            chunk_bytes in 1usize..400,
            threads in 2usize..5,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path().join("data")).unwrap();
            let before = dir.path().join("before.jsonl");
            write(&before, &stored, true);
            // Whatever of it is valid is stored (quarantine keeps the rest out).
            let mut rejects = Vec::new();
            ingest(
                &store,
                &Lines(before),
                &IngestOptions::default(),
                OnInvalid::Quarantine(&mut rejects),
                &mut |_| {},
            )
            .unwrap();
            let path = dir.path().join("input.jsonl");
            write(&path, &lines, last_newline);
            let by_line = outcome(validate(Some(&store), None, &Lines(path.clone()), &mut |_| {}));
            let chunks = JsonlChunks::open(&path).unwrap().with_chunk_bytes(chunk_bytes);
            let threaded = outcome(validate_jsonl(
                &store,
                chunks,
                &Lines(path),
                threads,
                &mut |_| {},
            ));
            prop_assert_eq!(threaded, by_line);
        }

        /// The chunks' items, in order, are the line reader's.
        #[test]
        fn chunks_hold_the_reader_s_items(
            lines in prop::collection::vec(line(), 0..30),
            last_newline in any::<bool>(),
            chunk_bytes in 1usize..300,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("input.jsonl");
            write(&path, &lines, last_newline);
            let file = path.display().to_string();
            let mut chunked = Vec::new();
            for chunk in JsonlChunks::open(&path).unwrap().with_chunk_bytes(chunk_bytes) {
                chunked.extend(chunk.unwrap().items(&file).map(|i| format!("{i:?}")));
            }
            let read: Vec<String> = JsonlReader::open(&path)
                .unwrap()
                .map(|i| format!("{:?}", i.unwrap()))
                .collect();
            prop_assert_eq!(chunked, read);
        }
    }

    #[test]
    fn a_byte_order_mark_and_invalid_utf8_read_alike_in_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.jsonl");
        let good =
            r#"{"thread":"t","id":"1","role":"user","content":"c","ts":"2024-03-01T09:30:00Z"}"#;
        let mut bytes = b"\xef\xbb\xbf".to_vec();
        bytes.extend_from_slice(good.as_bytes());
        bytes.extend_from_slice(b"\n\xff\xfe\n");
        std::fs::write(&path, bytes).unwrap();
        let file = path.display().to_string();
        let mut chunked = Vec::new();
        for chunk in JsonlChunks::open(&path).unwrap().with_chunk_bytes(5) {
            chunked.extend(chunk.unwrap().items(&file).map(|i| format!("{i:?}")));
        }
        let read: Vec<String> = JsonlReader::open(&path)
            .unwrap()
            .map(|i| format!("{:?}", i.unwrap()))
            .collect();
        assert_eq!(chunked.len(), 2);
        assert!(chunked[1].contains("not valid UTF-8"), "{}", chunked[1]);
        assert_eq!(chunked, read);
    }
}
