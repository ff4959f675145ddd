//! Append throughput of the strataflow log, against raw fjall as the anchor.
//!
//! # What is measured
//!
//! 20 000 realistic chat messages (the text of LoCoMo conversation `conv-26`,
//! cycled, spread round-robin over 40 threads with contiguous positions per
//! thread, unique external ids and alternating user/assistant roles) are written
//! in 20 commits of 1 000 records each. Criterion reports messages per second.
//!
//! - `log_append`: [`Store::append`] with [`Durability::Sync`], i.e. one atomic
//!   fjall batch per 1 000 messages, fsynced (`PersistMode::SyncAll`). This
//!   includes everything the log does per record: encoding the envelope,
//!   hashing it (the id), the duplicate and parent checks, the thread-order and
//!   external-id checks, and the index entries (`ids`, per-kind, per-thread,
//!   external-id, thread heads, counters).
//! - `raw_fjall_anchor`: the *same envelope bytes* (encoded before timing)
//!   inserted into a single fjall keyspace keyed by the 8-byte big-endian
//!   sequence number, in the same 20 batches of 1 000 with `SyncAll`. No
//!   encoding, hashing, checks or indexes.
//! - `raw_fjall_same_entries`: the five entries the log writes per message
//!   (record, `ids`, `kinds`, `threads`, `external`), pre-built, inserted raw
//!   in the same batches with `SyncAll`: the storage cost of the log's key
//!   layout alone, so `log_append / raw_fjall_same_entries` is the cost of
//!   encoding, hashing and checks.
//! - `log_append_buffered`: as `log_append` but with [`Durability::Buffered`]
//!   (no fsync), for information: how much of the cost is the fsync.
//!
//! Each iteration uses a fresh directory and a freshly opened database; only
//! the appends are timed (`iter_custom`), not creating, opening or dropping.
//!
//! # Why raw fjall is the anchor
//!
//! Absolute numbers depend on the disk (fsync latency above all) and the CPU,
//! so they do not compare across machines. Raw fjall with the same bytes, the
//! same batch size and the same durability is the floor the log cannot beat:
//! the ratio `log_append / raw_fjall_anchor`, measured in the same run on the
//! same disk, is the overhead of the log itself (encoding, hashing, checks and
//! indexes) and is what to watch for regressions.
//!
//! # Running
//!
//! ```text
//! cargo bench --bench append            # the real measurement (~1–2 min)
//! cargo bench --bench append -- --test  # quick check that every benchmark runs
//! ```
//!
//! The databases are created under the system temporary directory (`TMPDIR`
//! moves them); it must be on a real disk, not tmpfs, for fsync to mean
//! anything.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use strataflow_log::envelope::encode_with_id;
use strataflow_log::record::{Message, Record, Role};
use strataflow_log::{Durability, SourceTime, Store};
use support::insert_raw;

/// Messages written per iteration.
const MESSAGES: usize = 20_000;
/// Records per commit (one fsync each with `Sync`).
const BATCH: usize = 1_000;
/// Threads the messages are spread over, round-robin.
const THREADS: usize = 40;
/// Source time of the first message (2023-05-08T13:56:00Z), in ms.
const START_MS: i64 = 1_683_554_160_000;

/// One utterance of the LoCoMo conversation.
struct Utterance {
    speaker: String,
    dia_id: String,
    text: String,
}

/// The LoCoMo conversation file: the repository copy, else the shared one.
fn locomo_path() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = root.join("tests/data/locomo/conv-26.json");
    if repo.exists() {
        repo
    } else {
        root.join("../shared/data/locomo/conv-26.json")
    }
}

/// Reads the utterances of all sessions, in session order.
fn load_locomo() -> Vec<Utterance> {
    let path = locomo_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).expect("conv-26.json is JSON");
    let object = json.as_object().expect("conv-26.json is an object");
    let mut sessions: Vec<(u32, &Vec<serde_json::Value>)> = object
        .iter()
        .filter_map(|(key, value)| {
            let n = key.strip_prefix("session_")?.parse().ok()?;
            Some((n, value.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    let field = |turn: &serde_json::Value, name: &str| {
        turn.get(name)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_else(|| panic!("a turn without `{name}`"))
            .to_owned()
    };
    let utterances: Vec<Utterance> = sessions
        .into_iter()
        .flat_map(|(_, turns)| turns.iter())
        .map(|turn| Utterance {
            speaker: field(turn, "speaker"),
            dia_id: field(turn, "dia_id"),
            text: field(turn, "text"),
        })
        .collect();
    assert!(
        !utterances.is_empty(),
        "no utterances in {}",
        path.display()
    );
    utterances
}

/// `MESSAGES` messages cycling through the conversation, round-robin over
/// `THREADS` threads, positions contiguous per thread.
fn build_messages() -> Vec<Record> {
    let utterances = load_locomo();
    utterances
        .iter()
        .cycle()
        .take(MESSAGES)
        .enumerate()
        .map(|(i, u)| {
            // Round-robin: message i is the (i / THREADS)-th of thread i % THREADS.
            let t = i % THREADS;
            let position = (i / THREADS) as u64;
            Record::Message(Message {
                tenant: "bench".to_owned(),
                thread: format!("locomo-26-{t:02}"),
                external_id: format!("{}#{i}", u.dia_id),
                position,
                role: if position.is_multiple_of(2) {
                    Role::User
                } else {
                    Role::Assistant
                },
                speaker: Some(u.speaker.clone()),
                content: u.text.clone(),
                tool_calls: Vec::new(),
                time: SourceTime::utc_without_offset(START_MS + i as i64 * 1_000),
            })
        })
        .collect()
}

/// A fresh, empty temporary directory.
fn fresh_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("strataflow-bench-append-")
        .tempdir()
        .expect("create a temporary directory")
}

/// Appends all messages to a fresh store per iteration; times only the appends.
fn time_log_append(records: &[Record], durability: Durability, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = fresh_dir();
        let store = Store::open(dir.path()).expect("open the store");
        let start = Instant::now();
        for batch in records.chunks(BATCH) {
            let receipt = store.append(batch, durability).expect("append");
            assert_eq!(receipt.new_count(), batch.len());
            black_box(receipt);
        }
        total += start.elapsed();
        drop(store);
        drop(dir);
    }
    total
}

/// Inserts the envelopes, keyed by sequence number, into a fresh fjall
/// database per iteration; times only the inserts.
fn time_raw_fjall(envelopes: &[Vec<u8>], iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = fresh_dir();
        total += insert_raw(dir.path(), envelopes, BATCH);
        drop(dir);
    }
    total
}

/// The log's key layout for one message, rebuilt here so that the anchor
/// writes the same five entries the log writes (record, id, kind, thread and
/// external-id index), without encoding, hashing or checks.
fn index_entries(records: &[Record]) -> Vec<[(Vec<u8>, Vec<u8>); 5]> {
    let name = |k: &mut Vec<u8>, s: &str| {
        k.extend_from_slice(&u16::try_from(s.len()).unwrap().to_be_bytes());
        k.extend_from_slice(s.as_bytes());
    };
    records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let seq = (i as u64 + 1).to_be_bytes();
            let (id, envelope) = encode_with_id(r).expect("encode");
            let Record::Message(m) = r else {
                panic!("only messages");
            };
            let mut prefix = Vec::new();
            name(&mut prefix, &m.tenant);
            name(&mut prefix, &m.thread);
            let kind_key: Vec<u8> = std::iter::once(1u8).chain(seq).collect();
            let thread_key: Vec<u8> = prefix.iter().copied().chain(seq).collect();
            let thread_value: Vec<u8> = std::iter::once(1u8).chain(id.0).collect();
            let external_key: Vec<u8> = prefix
                .iter()
                .copied()
                .chain(m.external_id.bytes())
                .collect();
            [
                (seq.to_vec(), envelope),
                (id.0.to_vec(), seq.to_vec()),
                (kind_key, id.0.to_vec()),
                (thread_key, thread_value),
                (external_key, id.0.to_vec()),
            ]
        })
        .collect()
}

/// Inserts the same entries the log writes, into five keyspaces, in batches
/// of `BATCH` messages with `SyncAll`; times only the inserts.
fn time_raw_fjall_indexed(entries: &[[(Vec<u8>, Vec<u8>); 5]], iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = fresh_dir();
        let db = fjall::Database::builder(dir.path()).open().expect("open");
        let keyspaces: Vec<fjall::Keyspace> = ["records", "ids", "kinds", "threads", "external"]
            .into_iter()
            .map(|n| {
                db.keyspace(n, fjall::KeyspaceCreateOptions::default)
                    .expect("keyspace")
            })
            .collect();
        let start = Instant::now();
        for chunk in entries.chunks(BATCH) {
            let mut batch = db.batch().durability(Some(fjall::PersistMode::SyncAll));
            for message in chunk {
                for (ks, (k, v)) in keyspaces.iter().zip(message) {
                    batch.insert(ks, k.as_slice(), v.as_slice());
                }
            }
            batch.commit().expect("commit the batch");
        }
        total += start.elapsed();
        drop(keyspaces);
        drop(db);
        drop(dir);
    }
    total
}

/// Checks, once and untimed, that the anchor writes exactly the bytes and
/// keys the log writes in its `records` keyspace.
fn check_same_bytes(records: &[Record], envelopes: &[Vec<u8>]) {
    let dir = fresh_dir();
    let store = Store::open(dir.path()).expect("open the store");
    let n = 2 * BATCH;
    for batch in records.chunks(BATCH).take(2) {
        store.append(batch, Durability::Buffered).expect("append");
    }
    for (i, expected) in envelopes.iter().take(n).enumerate() {
        let seq = i as u64 + 1;
        let stored = store.raw_value(seq).expect("read").expect("stored");
        assert_eq!(&stored, expected, "log value at seq {seq} differs");
    }
}

fn bench_append(c: &mut Criterion) {
    let records = build_messages();
    let envelopes: Vec<Vec<u8>> = records
        .iter()
        .map(|r| encode_with_id(r).expect("encode").1)
        .collect();
    check_same_bytes(&records, &envelopes);
    let entries = index_entries(&records);

    let mut group = c.benchmark_group("append");
    group
        .throughput(Throughput::Elements(MESSAGES as u64))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(15));

    group.bench_function("log_append", |b| {
        b.iter_custom(|iters| time_log_append(&records, Durability::Sync, iters));
    });
    group.bench_function("raw_fjall_anchor", |b| {
        b.iter_custom(|iters| time_raw_fjall(&envelopes, iters));
    });
    group.bench_function("raw_fjall_same_entries", |b| {
        b.iter_custom(|iters| time_raw_fjall_indexed(&entries, iters));
    });
    group.bench_function("log_append_buffered", |b| {
        b.iter_custom(|iters| time_log_append(&records, Durability::Buffered, iters));
    });
    group.finish();
}

criterion_group!(benches, bench_append);
criterion_main!(benches);
