//! Backfill throughput: a whole synthetic conversation archive taken in by
//! strataflow (ingest and derivation) against three anchors, on the same
//! messages in the same run.
//!
//! # What is measured
//!
//! N messages from the deterministic synthetic archive
//! (`strataflow_testkit::synthetic`, 1 tenant, N / 250 threads, seed 7;
//! N from `STRATAFLOW_BENCH_MESSAGES`, default 200 000, 5 000 under
//! `--test`) are generated once, before any timing. Criterion reports
//! messages per second for:
//!
//! - `raw_fjall`: the messages' envelope bytes
//!   (`encode_with_id(&Record::Message(..))`, encoded before timing) inserted
//!   into one fjall keyspace keyed by the 8-byte big-endian sequence, in
//!   batches of 4 096 with `PersistMode::SyncAll` (as the anchor of
//!   `benches/append.rs`): the storage floor, no hashing, checks or indexes.
//! - `sqlite_fts5`: SQLite (bundled) in WAL mode with `synchronous=NORMAL`, a
//!   `messages` table (id, tenant, thread, position, role, speaker, text, ts)
//!   and an external-content FTS5 table over text and speaker, filled with
//!   prepared statements in transactions of 4 096 rows.
//! - `tantivy`: an on-disk index in a temporary directory
//!   (`Index::create_in_dir`) of text, speaker (both tokenized) and thread
//!   (untokenized), writer with a 256 MB budget on 2 threads, one commit at
//!   the end.
//! - `strataflow_no_derive`: the same without operators (`ingest
//!   --no-derive`: parse, validate, hash, seal, store messages and blocks
//!   with their indexes): the floor the storage path sets.
//! - `strataflow_backfill`: [`run_strataflow`]: the JSONL archive (written
//!   to a temporary file before timing) taken in exactly as `strataflow
//!   ingest` does: validated, then the staged runtime on every core
//!   (sealing, summaries, events and graph assertions derived as blocks
//!   seal, fsync per group), then the persisted views refreshed. The anchors only store or index text; strataflow also
//!   parses JSON, hashes every record, seals blocks and runs three operators
//!   per block, so the ratios say what that costs.
//!
//! Each iteration uses a fresh directory; only the work above is timed, not
//! creating or deleting directories. After criterion, one table gives the
//! median messages/s of each (over criterion's own iterations), the ratio of
//! strataflow to each anchor, and the process's peak RSS (`VmHWM`).
//!
//! The rows above run one after the other, so a change of the machine's
//! load between them moves their ratios (SQLite FTS5 has varied by a
//! quarter between runs on a shared machine). `rounds_fts5_no_derive_backfill`
//! therefore runs SQLite FTS5, `strataflow_no_derive` and
//! `strataflow_backfill` in rounds, one of each per round, the first of
//! the three rotating, and the table gives the median and the range of
//! each round's own ratios to FTS5: the ratios of runs made under the same
//! load.
//!
//! # Operator versions
//!
//! The group `operators` derives the same messages, the two LoCoMo
//! conversations shipped for the tests (`tests/data/locomo`, 788 messages),
//! under the legacy operators (`Profile::legacy_default`: the `@1`s) and
//! under the default profile of a new directory (`Profile::default_profile`:
//! `heuristic-summarizer@2`, `heuristic-extractor@5`, `heuristic-projector@4`,
//! the summarizer and the extractor reading one text analysis per block),
//! in the same run:
//!
//! - `derive_legacy_then_default`: the whole derivation (`Memory::derive`:
//!   summaries, events, graph assertions, their records) of the
//!   conversations imported without derivation;
//! - `extract_project_legacy_then_default`: the same with the summaries
//!   already derived (each by the profile's own summarizer), so only
//!   extraction and projection are timed (the default profile's text
//!   analysis then falls to its extraction), as when a directory's events
//!   are derived again under another extractor.
//!
//! - `operators_in_memory_legacy_then_default`: the operators alone. The
//!   conversations are derived once under both profiles (before any
//!   timing); each extraction's inputs (block, messages, summary) and each
//!   projection's batch of events are read back from the log, and each
//!   iteration calls the profile's extractor and projector on all of them
//!   in memory, five passes per sample (the default profile's extractor
//!   with the text analysis the pipeline computes for it, the key points of
//!   the neighbouring blocks and the thread's earlier events, as the
//!   derivation gave them). No log, no directory: the figure is the
//!   operators' own work. Each pass runs on a new thread, so no
//!   thread-local cache carries one pass's work into the next.
//!
//! The two derivation rows derive each profile in a child process of the
//! bench binary of its own, as a backfill runs one profile in its process:
//! derived one after the other in one process, each profile ran on the
//! heap and caches the other had left (the default profile, whose
//! derivation holds more, took the page faults of the heap's growth after
//! each legacy one), which is neither's own cost. Each criterion iteration
//! asks a child of each profile, one after the other and the first
//! alternating, for the same number of derivations, so that a change of
//! the machine's load weighs on both alike; a child first derives once
//! without reporting it (the one-time set-up of the operators' tables and
//! patterns, which a backfill pays once). Criterion's figure is the time
//! of the pairs.
//!
//! Importing the conversations (and deriving the summaries) is done before
//! the clock starts, in a fresh directory per derivation; the timed
//! derivation runs on a new thread (as each in-memory pass does: no
//! thread-local cache carries one derivation's texts into the next) and
//! commits without fsync (`Durability::Buffered`), so that the figures are
//! the operators' work, not the disk's. Besides the wall
//! time, each derivation records the process CPU time it took (user +
//! system of every thread, the log's background threads included) and the
//! deriving thread's own, both in nanoseconds (the scheduler's run time
//! of each thread, `/proc/self/task/*/schedstat`, so only on Linux); the table
//! after criterion gives the CPU per message of each (total over its
//! iterations) and the ratio of the default profile's to the legacy one's
//! (the target of issue 16: at most 1.2), also as the ratio of the medians
//! of the runs' CPU per message, which a run slowed by a neighbour on a
//! shared machine does not move.
//!
//! # Running
//!
//! ```text
//! cargo bench --features bench-anchors --bench backfill                                     # 200 000 messages
//! STRATAFLOW_BENCH_MESSAGES=1000000 cargo bench --features bench-anchors --bench backfill   # bigger
//! cargo bench --features bench-anchors --bench backfill -- --test                           # quick check (5 000)
//! cargo bench --features bench-anchors --bench backfill -- operators                        # operator versions only
//! ```
//!
//! Directories are created under the system temporary directory (`TMPDIR`
//! moves them); it must be on a real disk, not tmpfs, for fsync to mean
//! anything.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod support;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group};
use strataflow::Memory;
use strataflow::log::envelope::encode_with_id;
use strataflow::log::record::Record;
use strataflow::pipeline::ingest::OnInvalid;
use strataflow::pipeline::source::jsonl::parse_line;
use strataflow_testkit::synthetic::{SyntheticMessage, SyntheticOptions, messages};
use tantivy::schema::{STRING, Schema, TEXT};
use tantivy::{Index, IndexWriter, TantivyDocument};

/// The allocator of the `strataflow` binary, so that the bench measures what
/// the command does (the anchors in this process use it too).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Rows (or records) per transaction / batch.
const BATCH: usize = 4096;
/// Indexing memory budget of the tantivy writer, in bytes.
const TANTIVY_BUDGET: usize = 256 * 1024 * 1024;
/// Messages per thread on average.
const MESSAGES_PER_THREAD: u64 = 250;

/// Messages of a full run (see [`support::message_count`]).
const FULL_RUN_MESSAGES: u64 = 200_000;

/// Per-iteration throughputs (messages/s) of each benchmark, for the table.
static RATES: Mutex<BTreeMap<&'static str, Vec<f64>>> = Mutex::new(BTreeMap::new());

fn record_rate(name: &'static str, messages: u64, took: Duration) {
    let rate = messages as f64 / took.as_secs_f64().max(1e-9);
    RATES.lock().unwrap().entry(name).or_default().push(rate);
}

fn fresh_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("strataflow-bench-backfill-")
        .tempdir()
        .expect("create a temporary directory")
}

// ---------------------------------------------------------------------------
// strataflow

/// The strataflow backfill of `jsonl_path` into a new data directory `dir`,
/// exactly what `strataflow ingest FILE` does: the JSONL source read and
/// validated, the staged runtime on every core (sealing, the builtin
/// default operators deriving every block as it seals, group commit with
/// fsync per batch), then the persisted views brought up to date. Returns
/// the messages stored.
///
/// With `derive` false, the same run without operators (`ingest
/// --no-derive`): messages and blocks only, the floor the storage path sets.
fn run_strataflow(dir: &Path, jsonl_path: &Path, derive: bool) -> u64 {
    let memory = Memory::open(dir).expect("open the data directory");
    let mut options = memory.ingest_options().expect("default options");
    if !derive {
        options.operators = None;
    }
    let stats = memory
        .ingest_jsonl(jsonl_path, &options, OnInvalid::Refuse, &mut |_| {})
        .expect("ingest");
    assert_eq!(stats.failed_runs, 0, "no operator run fails");
    assert_eq!(stats.events > 0, derive, "the operators did real work");
    black_box(stats);
    stats.stored
}

fn time_strataflow(name: &'static str, derive: bool, jsonl: &Path, n: u64, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let took = strataflow_once(derive, jsonl, n);
        record_rate(name, n, took);
        total += took;
    }
    total
}

/// One backfill of `jsonl` (`n` messages) into a fresh directory.
fn strataflow_once(derive: bool, jsonl: &Path, n: u64) -> Duration {
    let dir = fresh_dir();
    let start = Instant::now();
    let stored = run_strataflow(dir.path(), jsonl, derive);
    let took = start.elapsed();
    assert_eq!(stored, n);
    took
}

/// Each round's ratios of the alternated rounds: (no-derive rate / FTS5
/// rate, backfill rate / FTS5 rate).
static ROUNDS: Mutex<Vec<(f64, f64)>> = Mutex::new(Vec::new());

/// `iters` rounds of SQLite FTS5, the backfill without derivation and the
/// full backfill, one of each per round, the first rotating from round to
/// round; each round's ratios to FTS5 go to [`ROUNDS`]. Returns the time
/// of all three.
fn time_rounds(msgs: &[SyntheticMessage], jsonl: &Path, n: u64, iters: u64) -> Duration {
    static ROUND: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let first = ROUND.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 3;
        let mut took = [Duration::ZERO; 3];
        for k in 0..3 {
            let which = (first + k) % 3;
            took[which] = match which {
                0 => sqlite_once(msgs),
                1 => strataflow_once(false, jsonl, n),
                _ => strataflow_once(true, jsonl, n),
            };
        }
        let [fts5, no_derive, backfill] = took;
        let fts5_s = fts5.as_secs_f64().max(1e-9);
        ROUNDS.lock().unwrap().push((
            fts5_s / no_derive.as_secs_f64().max(1e-9),
            fts5_s / backfill.as_secs_f64().max(1e-9),
        ));
        total += fts5 + no_derive + backfill;
    }
    total
}

// ---------------------------------------------------------------------------
// Anchors

fn time_raw_fjall(envelopes: &[Vec<u8>], iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = fresh_dir();
        let took = support::insert_raw(dir.path(), envelopes, BATCH);
        record_rate("raw_fjall", envelopes.len() as u64, took);
        total += took;
    }
    total
}

fn time_sqlite(msgs: &[SyntheticMessage], iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let took = sqlite_once(msgs);
        record_rate("sqlite_fts5", msgs.len() as u64, took);
        total += took;
    }
    total
}

/// One SQLite FTS5 load of `msgs` into a fresh directory.
fn sqlite_once(msgs: &[SyntheticMessage]) -> Duration {
    let dir = fresh_dir();
    let mut conn = rusqlite::Connection::open(dir.path().join("bench.sqlite")).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.execute_batch(
        "CREATE TABLE messages (
             rowid INTEGER PRIMARY KEY,
             id TEXT NOT NULL, tenant TEXT NOT NULL, thread TEXT NOT NULL,
             position INTEGER NOT NULL, role TEXT NOT NULL, speaker TEXT,
             text TEXT NOT NULL, ts TEXT NOT NULL);
         CREATE VIRTUAL TABLE messages_fts USING fts5(
             text, speaker, content='messages', content_rowid='rowid');",
    )
    .unwrap();
    let start = Instant::now();
    for chunk in msgs.chunks(BATCH) {
        let tx = conn.transaction().unwrap();
        {
            let mut row = tx
                .prepare_cached(
                    "INSERT INTO messages (id, tenant, thread, position, role, speaker, text, ts)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .unwrap();
            let mut fts = tx
                .prepare_cached(
                    "INSERT INTO messages_fts (rowid, text, speaker) VALUES (?1, ?2, ?3)",
                )
                .unwrap();
            for m in chunk {
                let rowid = row
                    .insert(rusqlite::params![
                        m.id,
                        m.tenant,
                        m.thread,
                        m.position as i64,
                        m.role,
                        m.speaker,
                        m.content,
                        m.ts()
                    ])
                    .unwrap();
                fts.execute(rusqlite::params![rowid, m.content, m.speaker])
                    .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    let took = start.elapsed();
    drop(conn);
    took
}

fn time_tantivy(msgs: &[SyntheticMessage], iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = fresh_dir();
        let mut sb = Schema::builder();
        let text = sb.add_text_field("text", TEXT);
        let speaker = sb.add_text_field("speaker", TEXT);
        let thread = sb.add_text_field("thread", STRING);
        let index = Index::create_in_dir(dir.path(), sb.build()).unwrap();
        let start = Instant::now();
        let mut writer: IndexWriter = index.writer_with_num_threads(2, TANTIVY_BUDGET).unwrap();
        for m in msgs {
            let mut doc = TantivyDocument::default();
            doc.add_text(text, &m.content);
            doc.add_text(speaker, &m.speaker);
            doc.add_text(thread, &m.thread);
            writer.add_document(doc).unwrap();
        }
        writer.commit().unwrap();
        writer.wait_merging_threads().unwrap();
        let took = start.elapsed();
        record_rate("tantivy", msgs.len() as u64, took);
        total += took;
    }
    total
}

// ---------------------------------------------------------------------------
// Operator versions

/// The LoCoMo conversations shipped for the tests.
const LOCOMO_FILES: [&str; 2] = [
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/locomo/conv-26.json"
    ),
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/locomo/conv-30.json"
    ),
];

/// Name of the legacy profile saved beside `default` in each directory.
const LEGACY: &str = "legacy";
/// Name of the profile that derives only the summaries (its extractor
/// finds nothing).
const SUMMARIES_ONLY: &str = "summaries-only";

/// (process CPU, deriving thread's CPU, wall, messages) of one derivation.
type OperatorRun = (Duration, Duration, Duration, u64);

/// Per profile and mode of the `operators` group: each derivation.
static OPERATOR_RUNS: Mutex<BTreeMap<&'static str, Vec<OperatorRun>>> = Mutex::new(BTreeMap::new());

/// An extractor that finds nothing: a profile with it derives only the
/// summaries.
struct NoEvents;

impl strataflow::operators::operator::Extractor for NoEvents {
    fn id(&self) -> strataflow::operators::operator::OperatorId {
        strataflow::operators::operator::OperatorId::new("bench-no-events", 1)
    }
    fn config_hash(&self) -> strataflow::log::Digest {
        strataflow::operators::operator::config_hash(&self.id(), "{}")
    }
    fn extract(
        &self,
        _: &strataflow::operators::operator::ExtractionInput<'_>,
    ) -> Result<
        strataflow::operators::operator::Extraction,
        strataflow::operators::operator::OperatorError,
    > {
        Ok(strataflow::operators::operator::Extraction {
            should_extract: false,
            reason: "bench: summaries only".to_owned(),
            events: Vec::new(),
        })
    }
}

/// A fresh directory holding the LoCoMo conversations (no derivation), the
/// legacy profile beside the default one and every block's summary already
/// derived by each summarizer of `summarizers`. Returns the messages stored.
fn operators_setup(dir: &Path, summarizers: &[&str]) -> (Memory, u64) {
    use strataflow::operators::profile::Profile;
    let mut memory = Memory::open(dir).expect("open the data directory");
    memory.register_extractor(std::sync::Arc::new(NoEvents));
    let legacy = Profile {
        name: LEGACY.to_owned(),
        ..Profile::legacy_default()
    };
    memory
        .save_profile(&legacy)
        .expect("save the legacy profile");
    let mut options = memory.ingest_options().expect("default options");
    options.operators = None;
    options.durability = strataflow::log::Durability::Buffered;
    let mut stored = 0;
    for file in LOCOMO_FILES {
        stored += memory
            .default_tenant()
            .import_locomo(Path::new(file), &options, OnInvalid::Refuse, &mut |_| {})
            .expect("import LoCoMo")
            .stored;
    }
    for summarizer in summarizers {
        memory
            .save_profile(&Profile {
                name: SUMMARIES_ONLY.to_owned(),
                summarizer: (*summarizer).to_owned(),
                extractor: "bench-no-events@1".to_owned(),
                ..Profile::legacy_default()
            })
            .expect("save the summaries-only profile");
        let stats = memory
            .derive(Some(SUMMARIES_ONLY), &memory.derive_options(), &mut |_| {})
            .expect("derive the summaries");
        assert!(stats.summaries > 0 && stats.events == 0);
    }
    (memory, stored)
}

/// One derivation of `profile` (`None`: the directory's default) in a
/// fresh directory set up by [`operators_setup`]: its CPU (process and
/// deriving thread), wall time and messages.
fn derive_once(profile: Option<&str>, summaries: bool) -> OperatorRun {
    use strataflow::operators::profile::Profile;
    let dir = fresh_dir();
    // With `summaries`, the summaries of the profile's own summarizer.
    let summarizer = match profile {
        Some(_) => Profile::legacy_default().summarizer,
        None => Profile::default_profile().summarizer,
    };
    let summarizers: &[&str] = if summaries { &[&summarizer] } else { &[] };
    let (memory, messages) = operators_setup(dir.path(), summarizers);
    // No fsync: the operators' CPU is what is compared, not the disk.
    let options = strataflow::pipeline::derive::DeriveOptions {
        durability: strataflow::log::Durability::Buffered,
        ..memory.derive_options()
    };
    // On a new thread, as the in-memory passes: the temporal parser's
    // remembered texts of one derivation do not serve the next (a backfill
    // never reads the same text twice). The clocks are read on that thread,
    // while it runs.
    let (stats, took, (process, thread), (process_end, thread_end)) = std::thread::scope(|s| {
        s.spawn(|| {
            let clocks = support::cpu_clocks();
            let start = Instant::now();
            let stats = memory
                .derive(profile, &options, &mut |_| {})
                .expect("derive");
            let took = start.elapsed();
            (stats, took, clocks, support::cpu_clocks())
        })
        .join()
        .expect("the deriving thread")
    });
    assert_eq!(stats.failed_runs, 0, "no operator run fails");
    assert!(stats.events > 0, "the extractor did real work");
    assert_eq!(stats.summaries > 0, !summaries);
    black_box(stats);
    (
        process_end.saturating_sub(process),
        thread_end.saturating_sub(thread),
        took,
        messages,
    )
}

/// The environment variable that makes this bench binary a child that
/// derives under one profile (see [`derivations_in_child`]):
/// `legacy|default:summaries(0|1):count`.
const DERIVATIONS_CHILD: &str = "STRATAFLOW_BENCH_DERIVATIONS";

/// The child's side: one derivation of the profile that is not reported
/// (the first derivation of a process pays the one-time set-up of the
/// operators' tables and patterns, which a backfill pays once), then
/// `count`, each printed as `derivation PROCESS_NS THREAD_NS WALL_NS
/// MESSAGES`.
fn derivations_child(spec: &str) {
    let parts: Vec<&str> = spec.split(':').collect();
    let [profile, summaries, count] = parts.as_slice() else {
        panic!("{DERIVATIONS_CHILD}={spec:?}: expected PROFILE:SUMMARIES:COUNT");
    };
    let profile = match *profile {
        "legacy" => Some(LEGACY),
        "default" => None,
        other => panic!("{DERIVATIONS_CHILD}: unknown profile {other:?}"),
    };
    let summaries = *summaries == "1";
    let count: u64 = count.parse().expect("a count of derivations");
    black_box(derive_once(profile, summaries));
    for _ in 0..count {
        let (process, thread, wall, messages) = derive_once(profile, summaries);
        println!(
            "derivation {} {} {} {messages}",
            process.as_nanos(),
            thread.as_nanos(),
            wall.as_nanos()
        );
    }
}

/// `count` derivations of `profile` (`legacy` or `default`) in a child
/// process of this bench binary, recorded under `name`. Returns their wall
/// time.
///
/// Each profile derives in a process of its own, as a backfill does:
/// derived one after the other in one process, each profile ran on the
/// heap and caches the other left (the default profile, whose derivation
/// holds more, then took the page faults of the heap's growth after each
/// legacy one: 130 against 38 perf samples in one run), which is not what
/// either costs on its own.
fn derivations_in_child(
    name: &'static str,
    profile: &str,
    summaries: bool,
    count: u64,
) -> Duration {
    let exe = std::env::current_exe().expect("the bench binary");
    let output = std::process::Command::new(exe)
        .env(
            DERIVATIONS_CHILD,
            format!("{profile}:{}:{count}", u8::from(summaries)),
        )
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("start a deriving child");
    assert!(output.status.success(), "the deriving child failed");
    let stdout = String::from_utf8(output.stdout).expect("the child's report is text");
    let mut wall_total = Duration::ZERO;
    let mut reported = 0;
    for line in stdout.lines() {
        let Some(fields) = line.strip_prefix("derivation ") else {
            continue;
        };
        let numbers: Vec<u64> = fields
            .split(' ')
            .map(|f| f.parse().expect("a number"))
            .collect();
        let [process, thread, wall, messages] = numbers.as_slice() else {
            panic!("a derivation line holds four numbers: {line:?}");
        };
        let wall = Duration::from_nanos(*wall);
        record_operator_run(
            name,
            (
                Duration::from_nanos(*process),
                Duration::from_nanos(*thread),
                wall,
                *messages,
            ),
        );
        wall_total += wall;
        reported += 1;
    }
    assert_eq!(reported, count, "the child reported every derivation");
    wall_total
}

/// Adds one run of the `operators` group under `name`.
fn record_operator_run(name: &'static str, run: OperatorRun) {
    OPERATOR_RUNS
        .lock()
        .unwrap()
        .entry(name)
        .or_default()
        .push(run);
}

/// `iters` derivations of the legacy profile and `iters` of the default
/// one, each profile in a child process of its own
/// ([`derivations_in_child`]), the two children one after the other, which
/// first alternating between calls (so that a change of the machine's load
/// weighs on both alike). Returns the time of both.
fn time_operator_pairs(
    names: (&'static str, &'static str),
    summaries: bool,
    iters: u64,
) -> Duration {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let legacy = || derivations_in_child(names.0, "legacy", summaries, iters);
    let default = || derivations_in_child(names.1, "default", summaries, iters);
    if CALLS
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        .is_multiple_of(2)
    {
        legacy() + default()
    } else {
        default() + legacy()
    }
}

/// `iters` pairs of `legacy` and `default`, in alternating order. Returns
/// the time of both.
fn alternate(
    iters: u64,
    mut legacy: impl FnMut() -> Duration,
    mut default: impl FnMut() -> Duration,
) -> Duration {
    let mut total = Duration::ZERO;
    for i in 0..iters {
        total += if i % 2 == 0 {
            legacy() + default()
        } else {
            default() + legacy()
        };
    }
    total
}

/// One extraction's inputs, read back from the log: what the derivation
/// gave the extractor.
struct ExtractionParts {
    id: strataflow::log::RecordId,
    block: strataflow::log::record::Block,
    messages: Vec<(strataflow::log::RecordId, strataflow::log::record::Message)>,
    summary: strataflow::log::record::BlockSummary,
    /// The key points of the thread's blocks before and after it.
    neighbour_key_points: [Option<Vec<String>>; 2],
    /// The events of the thread's earlier blocks (the latest
    /// `TIMELINE_LIMIT`), as the derivation kept them.
    timeline: Vec<(strataflow::log::RecordId, strataflow::log::record::Event)>,
}

/// A profile's operators and what they were given in a derivation of the
/// LoCoMo conversations.
struct OperatorWork {
    operators: strataflow::operators::profile::Operators,
    extractions: Vec<ExtractionParts>,
    batches: Vec<Vec<(strataflow::log::RecordId, strataflow::log::record::Event)>>,
}

/// The legacy and default profiles' work, and the messages (once).
fn operator_work() -> (OperatorWork, OperatorWork, u64) {
    use strataflow::log::record::{Outcome, Record};
    use strataflow::operators::profile::{Profile, Registry};
    let dir = fresh_dir();
    let (memory, messages) = operators_setup(dir.path(), &[]);
    let options = strataflow::pipeline::derive::DeriveOptions {
        durability: strataflow::log::Durability::Buffered,
        ..memory.derive_options()
    };
    for profile in [Some(LEGACY), None] {
        memory
            .derive(profile, &options, &mut |_| {})
            .expect("derive");
    }
    let mut records = BTreeMap::new();
    let mut runs = Vec::new();
    for stored in memory.store().scan(0) {
        let stored = stored.expect("read the log");
        if let Record::Derivation(d) = &stored.record
            && matches!(d.outcome, Outcome::Ok)
        {
            runs.push(d.clone());
        }
        records.insert(stored.id, stored.record);
    }
    // Each thread's blocks in order, and each block's key points under
    // each summarizer.
    let mut blocks: BTreeMap<(String, String), BTreeMap<u32, strataflow::log::RecordId>> =
        BTreeMap::new();
    for (id, record) in &records {
        if let Record::Block(b) = record {
            blocks
                .entry((b.tenant.clone(), b.thread.clone()))
                .or_default()
                .insert(b.ordinal, *id);
        }
    }
    let key_points: BTreeMap<(&str, strataflow::log::RecordId), Vec<String>> = runs
        .iter()
        .filter_map(|run| match (run.inputs.first(), run.outputs.first()) {
            (Some(block), Some(out)) => match records.get(out) {
                Some(Record::BlockSummary(s)) => {
                    Some(((run.operator.as_str(), *block), s.key_points.clone()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    let registry = Registry::builtin();
    let work = |profile: &Profile| {
        let operators = registry.resolve(profile).expect("built-in operators");
        let (summarizer, extractor, projector) = (
            operators.summarizer.id().to_string(),
            operators.extractor.id().to_string(),
            operators.projector.id().to_string(),
        );
        let mut extractions = Vec::new();
        let mut batches = Vec::new();
        // Per thread, the events extracted so far, as the derivation keeps
        // them (the latest `TIMELINE_LIMIT`).
        let mut timelines: BTreeMap<(String, String), Vec<_>> = BTreeMap::new();
        for run in &runs {
            if run.operator == extractor {
                let (Some(&id), Some(summary_id)) = (run.inputs.first(), run.inputs.get(1)) else {
                    panic!("an extraction's inputs are a block and its summary");
                };
                let (Some(Record::Block(block)), Some(Record::BlockSummary(summary))) =
                    (records.get(&id), records.get(summary_id))
                else {
                    panic!("an extraction's inputs are a block and its summary");
                };
                let messages = block
                    .messages
                    .iter()
                    .map(|id| match records.get(id) {
                        Some(Record::Message(m)) => (*id, m.clone()),
                        _ => panic!("a block's message is in the log"),
                    })
                    .collect();
                let thread = (block.tenant.clone(), block.thread.clone());
                let neighbour = |ordinal: Option<u32>| {
                    let id = blocks.get(&thread)?.get(&ordinal?)?;
                    key_points.get(&(summarizer.as_str(), *id)).cloned()
                };
                let timeline = timelines.entry(thread.clone()).or_default();
                extractions.push(ExtractionParts {
                    id,
                    block: block.clone(),
                    messages,
                    summary: summary.clone(),
                    neighbour_key_points: [
                        neighbour(block.ordinal.checked_sub(1)),
                        neighbour(block.ordinal.checked_add(1)),
                    ],
                    timeline: timeline.clone(),
                });
                timeline.extend(run.outputs.iter().filter_map(|id| match records.get(id) {
                    Some(Record::Event(e)) => Some((*id, e.clone())),
                    _ => None,
                }));
                let excess = timeline
                    .len()
                    .saturating_sub(strataflow::operators::operator::TIMELINE_LIMIT);
                timeline.drain(..excess);
            } else if run.operator == projector {
                batches.push(
                    run.inputs
                        .iter()
                        .map(|id| match records.get(id) {
                            Some(Record::Event(e)) => (*id, e.clone()),
                            _ => panic!("a projection's input is an event"),
                        })
                        .collect(),
                );
            }
        }
        assert!(!extractions.is_empty() && !batches.is_empty());
        OperatorWork {
            operators,
            extractions,
            batches,
        }
    };
    (
        work(&Profile::legacy_default()),
        work(&Profile::default_profile()),
        messages,
    )
}

/// Passes over a profile's work per sample of the in-memory group.
const IN_MEMORY_PASSES: u32 = 5;

/// [`IN_MEMORY_PASSES`] passes of `work`'s extractions and projections,
/// recorded under `name`. Each pass runs on a new thread, so that no
/// thread-local cache (the temporal parser's remembered texts) carries one
/// pass's work into the next: every pass starts as a derivation does. The
/// process and thread CPU recorded are the pass threads' own (an ended
/// thread leaves `/proc/self/task`).
fn time_operators_in_memory(name: &'static str, work: &OperatorWork, messages: u64) -> Duration {
    let start = Instant::now();
    let mut cpu = Duration::ZERO;
    for _ in 0..IN_MEMORY_PASSES {
        cpu += std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let (_, before) = support::cpu_clocks();
                    operators_pass(work);
                    let (_, after) = support::cpu_clocks();
                    after.saturating_sub(before)
                })
                .join()
                .expect("an operator pass")
        });
    }
    let took = start.elapsed();
    record_operator_run(
        name,
        (cpu, cpu, took, messages * u64::from(IN_MEMORY_PASSES)),
    );
    took
}

/// One pass of `work`'s extractions and projections, as the derivation's
/// stages call them.
fn operators_pass(work: &OperatorWork) {
    use strataflow::operators::operator::{
        BlockInput, ExtractionInput, ProjectionInput, analyse_messages,
    };
    let ops = &work.operators;
    for x in &work.extractions {
        // As the extraction stage does for an extractor that reads it.
        let analyses = ops
            .extractor
            .reads_analysis()
            .then(|| analyse_messages(&x.messages));
        let input = ExtractionInput {
            target: BlockInput {
                id: x.id,
                block: &x.block,
                messages: &x.messages,
                attempt: 1,
                analyses: analyses.as_deref(),
            },
            summary: &x.summary,
            previous_key_points: x.neighbour_key_points[0].as_deref(),
            next_key_points: x.neighbour_key_points[1].as_deref(),
            timeline: (&x.timeline).into(),
        };
        black_box(ops.extractor.extract(&input).expect("extract"));
    }
    for batch in &work.batches {
        let tenant = batch.first().map_or("", |(_, e)| e.tenant.as_str());
        let input = ProjectionInput {
            tenant,
            events: batch,
            attempt: 1,
        };
        black_box(ops.projector.project(&input).expect("project"));
    }
}

fn bench_operators(c: &mut Criterion) {
    let mut group = c.benchmark_group("operators");
    // 15 s per row (60 to 120 derivations of each profile): with 5 s the
    // same code's ratios spread by about ±0.06 between runs on a shared
    // two-core machine.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(15));
    group.bench_function("derive_legacy_then_default", |b| {
        b.iter_custom(|iters| {
            time_operator_pairs(("legacy_derive", "default_derive"), false, iters)
        });
    });
    group.bench_function("extract_project_legacy_then_default", |b| {
        b.iter_custom(|iters| {
            time_operator_pairs(
                ("legacy_extract_project", "default_extract_project"),
                true,
                iters,
            )
        });
    });
    let (legacy, default, messages) = operator_work();
    group.bench_function("operators_in_memory_legacy_then_default", |b| {
        b.iter_custom(|iters| {
            alternate(
                iters,
                || time_operators_in_memory("legacy_in_memory", &legacy, messages),
                || time_operators_in_memory("default_in_memory", &default, messages),
            )
        });
    });
    group.finish();
    print_operators_table();
}

fn print_operators_table() {
    use strataflow::operators::profile::Profile;
    let runs = OPERATOR_RUNS.lock().unwrap().clone();
    // (process CPU, thread CPU, wall) per message in microseconds, and
    // iterations.
    let per_message = |name: &str| -> Option<([f64; 3], usize)> {
        let r = runs.get(name)?;
        let messages: u64 = r.iter().map(|(_, _, _, m)| m).sum();
        let n = messages.max(1) as f64;
        let us = |d: Duration| d.as_secs_f64() * 1e6 / n;
        Some((
            [
                us(r.iter().map(|r| r.0).sum()),
                us(r.iter().map(|r| r.1).sum()),
                us(r.iter().map(|r| r.2).sum()),
            ],
            r.len(),
        ))
    };
    let ids = |p: &Profile| format!("{} + {}", p.extractor, p.projector);
    let (legacy, default) = (Profile::legacy_default(), Profile::default_profile());
    println!();
    println!(
        "operator versions on the LoCoMo conversations (legacy: {}; default: {})",
        ids(&legacy),
        ids(&default)
    );
    println!(
        "  {:<26} {:>16} {:>16} {:>16} {:>11}",
        "benchmark", "CPU us/message", "thread us/msg", "wall us/message", "iterations"
    );
    for name in [
        "legacy_derive",
        "default_derive",
        "legacy_extract_project",
        "default_extract_project",
        "legacy_in_memory",
        "default_in_memory",
    ] {
        if let Some(([cpu, thread, wall], n)) = per_message(name) {
            println!("  {name:<26} {cpu:>16.1} {thread:>16.1} {wall:>16.1} {n:>11}");
        }
    }
    for (what, old, new) in [
        ("whole derivation", "legacy_derive", "default_derive"),
        (
            "extraction + projection",
            "legacy_extract_project",
            "default_extract_project",
        ),
        (
            "operators in memory",
            "legacy_in_memory",
            "default_in_memory",
        ),
    ] {
        if let (Some((a, _)), Some((b, _))) = (per_message(old), per_message(new)) {
            let ratio = |i: usize| b[i] / a[i].max(1e-9);
            let medians = median_per_message(&runs, old).zip(median_per_message(&runs, new));
            println!(
                "  {what}: CPU per message default / legacy = {:.3} (deriving thread {:.3}, wall {:.3}; of the medians {}; target <= 1.2)",
                ratio(0),
                ratio(1),
                ratio(2),
                medians.map_or_else(
                    || "-".to_owned(),
                    |(a, b)| format!("{:.3}", b / a.max(1e-9))
                )
            );
        }
    }
}

/// The median over `name`'s runs of the CPU per message of one run (the
/// process's, in microseconds): on a shared machine a run slowed by a
/// neighbour moves the mean of a row, not its median.
fn median_per_message(runs: &BTreeMap<&'static str, Vec<OperatorRun>>, name: &str) -> Option<f64> {
    median(
        runs.get(name)?
            .iter()
            .map(|(cpu, _, _, messages)| cpu.as_secs_f64() * 1e6 / (*messages).max(1) as f64)
            .collect(),
    )
}

// ---------------------------------------------------------------------------
// Report

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn print_table(n: u64, threads: u32) {
    let rates = RATES.lock().unwrap().clone();
    let get = |name: &str| rates.get(name).cloned().and_then(median);
    let ours = get("strataflow_backfill");
    println!();
    println!("backfill of {n} synthetic messages in {threads} threads (median over iterations)");
    println!(
        "  {:<22} {:>14} {:>12} {:>18}",
        "system", "messages/s", "iterations", "strataflow / this"
    );
    for name in [
        "strataflow_backfill",
        "strataflow_no_derive",
        "raw_fjall",
        "sqlite_fts5",
        "tantivy",
    ] {
        let rate = get(name);
        let iterations = rates.get(name).map_or(0, Vec::len);
        let ratio = match (ours, rate) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.3}", a / b),
            _ => "-".to_owned(),
        };
        println!(
            "  {:<22} {:>14} {:>12} {:>18}",
            name,
            rate.map_or_else(|| "-".to_owned(), |r| format!("{r:.0}")),
            iterations,
            ratio
        );
    }
    if let (Some(floor), Some(fjall), Some(fts5)) = (
        get("strataflow_no_derive"),
        get("raw_fjall"),
        get("sqlite_fts5"),
    ) {
        println!(
            "  without derivation strataflow takes {:.3} x raw fjall and {:.3} x SQLite FTS5",
            floor / fjall,
            floor / fts5
        );
    }
    let rounds = ROUNDS.lock().unwrap().clone();
    if !rounds.is_empty() {
        let spread = |pick: fn(&(f64, f64)) -> f64| {
            let v: Vec<f64> = rounds.iter().map(pick).collect();
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            median(v).map_or_else(
                || "-".to_owned(),
                |m| format!("{m:.3} x (rounds from {lo:.3} to {hi:.3})"),
            )
        };
        println!(
            "  alternated rounds ({}), each round's own ratio to SQLite FTS5:",
            rounds.len()
        );
        println!("    without derivation: {}", spread(|r| r.0));
        println!("    full backfill:      {}", spread(|r| r.1));
    }
    println!(
        "  peak RSS (VmHWM) of the bench process: {}",
        peak_rss_mib().map_or_else(|| "?".to_owned(), |m| format!("{m:.0} MiB"))
    );
}

fn bench_backfill(c: &mut Criterion) {
    let n = support::message_count(FULL_RUN_MESSAGES);
    let threads = u32::try_from((n / MESSAGES_PER_THREAD).max(1)).unwrap_or(u32::MAX);
    let options = SyntheticOptions {
        messages: n,
        threads,
        seed: 7,
        tenants: 1,
    };
    // Everything each system needs, prepared before any timing.
    let msgs: Vec<SyntheticMessage> = messages(&options).collect();
    let mut line = String::new();
    let envelopes: Vec<Vec<u8>> = msgs
        .iter()
        .enumerate()
        .map(|(i, m)| {
            line.clear();
            m.write_json_line(&mut line);
            let input = parse_line("synthetic", i + 1, line.trim_end()).expect("parse");
            let record = Record::Message(input.to_message(m.position));
            encode_with_id(&record).expect("encode").1
        })
        .collect();
    let jsonl_dir = fresh_dir();
    let jsonl = jsonl_dir.path().join("archive.jsonl");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&jsonl).unwrap());
        strataflow_testkit::synthetic::write_archive(&options, &mut file).unwrap();
    }

    let mut group = c.benchmark_group("backfill");
    group
        .throughput(Throughput::Elements(n))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("raw_fjall", |b| {
        b.iter_custom(|iters| time_raw_fjall(&envelopes, iters));
    });
    group.bench_function("sqlite_fts5", |b| {
        b.iter_custom(|iters| time_sqlite(&msgs, iters));
    });
    group.bench_function("tantivy", |b| {
        b.iter_custom(|iters| time_tantivy(&msgs, iters));
    });
    group.bench_function("strataflow_backfill", |b| {
        b.iter_custom(|iters| time_strataflow("strataflow_backfill", true, &jsonl, n, iters));
    });
    group.bench_function("strataflow_no_derive", |b| {
        b.iter_custom(|iters| time_strataflow("strataflow_no_derive", false, &jsonl, n, iters));
    });
    group.bench_function("rounds_fts5_no_derive_backfill", |b| {
        b.iter_custom(|iters| time_rounds(&msgs, &jsonl, n, iters));
    });
    group.finish();
    print_table(n, threads);
}

criterion_group!(benches, bench_backfill, bench_operators);

/// Criterion's main, unless this process is a deriving child of the
/// `operators` group ([`DERIVATIONS_CHILD`]).
fn main() {
    if let Ok(spec) = std::env::var(DERIVATIONS_CHILD) {
        derivations_child(&spec);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
