//! Parquet export throughput, beside a bare arrow-rs writer of the same
//! message rows in the same run.
//!
//! # What is measured
//!
//! N synthetic messages (`strataflow_testkit::synthetic`, 250 per thread,
//! seed 7; N from `STRATAFLOW_BENCH_MESSAGES`, default 1 000 000, 5 000
//! under `--test`) are ingested once, without derivation, before timing.
//! Then, per iteration into a fresh directory:
//!
//! - `strataflow_export`: `export_parquet` of the whole store — one scan of
//!   the log, decoding every record, every table (messages and the blocks
//!   they sealed), each row with its envelope, zstd, 65 536-row groups,
//!   `manifest.json`.
//! - `arrow_rs_bare`: the same message rows, already decoded and held in
//!   memory before timing, written with arrow-rs' `ArrowWriter` to one file
//!   with the same schema (message columns plus the envelope), the same
//!   compression and row groups. No log, no decoding, no blocks: the
//!   writer's floor.
//!
//! Rows per second of each and their ratio are printed after criterion.
//!
//! ```text
//! cargo bench --bench export                                     # 1 000 000 messages
//! STRATAFLOW_BENCH_MESSAGES=200000 cargo bench --bench export
//! cargo bench --bench export -- --test                           # quick check
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod support;

use std::fs::File;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{
    ArrayRef, BinaryArray, Int16Array, ListBuilder, StringArray, StringBuilder,
    TimestampMillisecondArray, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use strataflow::Memory;
use strataflow::interchange::export::{ExportOptions, ROW_GROUP_ROWS, export_parquet};
use strataflow::log::Store;
use strataflow::log::envelope::encode;
use strataflow::log::record::{Message, Record};
use strataflow::pipeline::ingest::OnInvalid;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

static RATES: Mutex<Vec<(&'static str, f64)>> = Mutex::new(Vec::new());

fn bare_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("seq", DataType::UInt64, false),
        Field::new("id", DataType::Utf8, false),
        Field::new("tenant", DataType::Utf8, false),
        Field::new("thread", DataType::Utf8, false),
        Field::new("external_id", DataType::Utf8, false),
        Field::new("position", DataType::UInt64, false),
        Field::new("role", DataType::Utf8, false),
        Field::new("speaker", DataType::Utf8, true),
        Field::new("content", DataType::Utf8, false),
        Field::new(
            "time",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("offset_minutes", DataType::Int16, true),
        Field::new(
            "tool_calls",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
        Field::new("envelope", DataType::Binary, false),
    ]))
}

/// Writes the rows with a bare `ArrowWriter`, in row groups like the export.
fn bare_write(rows: &[(u64, String, Message, Vec<u8>)], path: &std::path::Path) {
    let schema = bare_schema();
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut w = ArrowWriter::try_new(
        File::create(path).unwrap(),
        Arc::clone(&schema),
        Some(props),
    )
    .unwrap();
    for chunk in rows.chunks(ROW_GROUP_ROWS) {
        let mut tools = ListBuilder::new(StringBuilder::new());
        for (_, _, m, _) in chunk {
            for c in &m.tool_calls {
                tools.values().append_value(&c.name);
            }
            tools.append(true);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from_iter_values(chunk.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|r| r.1.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|r| r.2.tenant.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|r| r.2.thread.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|r| r.2.external_id.as_str()),
            )),
            Arc::new(UInt64Array::from_iter_values(
                chunk.iter().map(|r| r.2.position),
            )),
            Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|r| r.2.role.as_str()),
            )),
            Arc::new(StringArray::from_iter(
                chunk.iter().map(|r| r.2.speaker.as_deref()),
            )),
            Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|r| r.2.content.as_str()),
            )),
            Arc::new(
                TimestampMillisecondArray::from_iter_values(chunk.iter().map(|r| r.2.time.utc_ms))
                    .with_timezone("UTC"),
            ),
            Arc::new(Int16Array::from_iter(
                chunk.iter().map(|r| r.2.time.offset_minutes),
            )),
            Arc::new(tools.finish()),
            Arc::new(BinaryArray::from_iter_values(
                chunk.iter().map(|r| r.3.as_slice()),
            )),
        ];
        w.write(&RecordBatch::try_new(Arc::clone(&schema), columns).unwrap())
            .unwrap();
    }
    w.close().unwrap();
}

fn bench_export(c: &mut Criterion) {
    let n = support::message_count(1_000_000);
    let threads = u32::try_from((n / 250).max(1)).unwrap_or(u32::MAX);
    let work = tempfile::tempdir().unwrap();
    let jsonl = work.path().join("archive.jsonl");
    {
        let mut f = std::io::BufWriter::new(File::create(&jsonl).unwrap());
        let options = strataflow_testkit::synthetic::SyntheticOptions {
            messages: n,
            threads,
            seed: 7,
            tenants: 1,
        };
        strataflow_testkit::synthetic::write_archive(&options, &mut f).unwrap();
    }
    let data = work.path().join("data");
    let (rows, records) = {
        let memory = Memory::open(&data).unwrap();
        let mut options = memory.ingest_options().unwrap();
        options.operators = None;
        options.durability = strataflow::log::Durability::Buffered;
        memory
            .ingest_jsonl(&jsonl, &options, OnInvalid::Refuse, &mut |_| {})
            .unwrap();
        let rows: Vec<(u64, String, Message, Vec<u8>)> = memory
            .store()
            .scan(1)
            .filter_map(|r| {
                let r = r.unwrap();
                let bytes = encode(&r.record).unwrap();
                match r.record {
                    Record::Message(m) => Some((r.seq, r.id.to_hex(), m, bytes)),
                    _ => None,
                }
            })
            .collect();
        (rows, memory.stats().unwrap().total_records)
    };
    let store = Store::open(&data).unwrap();

    let mut group = c.benchmark_group("export");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(records));
    group.bench_function("strataflow_export", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let out = tempfile::tempdir().unwrap();
                let start = Instant::now();
                let manifest =
                    export_parquet(&store, out.path(), &ExportOptions::default()).unwrap();
                let took = start.elapsed();
                assert_eq!(manifest.files.values().sum::<u64>(), records);
                RATES
                    .lock()
                    .unwrap()
                    .push(("strataflow_export", records as f64 / took.as_secs_f64()));
                total += took;
            }
            total
        });
    });
    group.throughput(Throughput::Elements(rows.len() as u64));
    group.bench_function("arrow_rs_bare", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let out = tempfile::tempdir().unwrap();
                let start = Instant::now();
                bare_write(&rows, &out.path().join("messages.parquet"));
                let took = start.elapsed();
                RATES
                    .lock()
                    .unwrap()
                    .push(("arrow_rs_bare", rows.len() as f64 / took.as_secs_f64()));
                total += took;
            }
            total
        });
    });
    group.finish();

    let rates = RATES.lock().unwrap();
    let median = |name: &str| {
        let mut v: Vec<f64> = rates
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, r)| *r)
            .collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let (ours, bare) = (median("strataflow_export"), median("arrow_rs_bare"));
    println!();
    println!(
        "export of {records} records ({} messages), medians",
        rows.len()
    );
    println!("  strataflow_export   {ours:>12.0} rows/s");
    println!("  arrow_rs_bare       {bare:>12.0} rows/s");
    println!("  ratio               {:>12.3}", ours / bare.max(1e-9));
}

criterion_group!(benches, bench_export);
criterion_main!(benches);
