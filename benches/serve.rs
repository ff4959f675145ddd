//! `strataflow serve` against the library in the same run (issue 15).
//!
//! # What is measured
//!
//! - `append/http`: a synthetic archive (testkit, 16 threads, seed 15) sent
//!   by 4 clients, each owning a quarter of the threads, in batches of 100
//!   (`POST /v1/messages`, one keep-alive connection per client) to a real
//!   `strataflow serve` process on loopback, on a fresh directory; timed
//!   from the first request to the last acknowledgement (every message
//!   durable and its blocks derived).
//! - `append/in_process`: the same batches of the same messages through the
//!   library's streaming ingester (`Memory::ingester`, the server's queue of
//!   4096, `append_batch`) from 4 tasks, on a fresh directory.
//! - `search/in_process`: what the server does for a search, in the
//!   library: a `Searcher` kept in memory and caught up with the log
//!   (`Memory::refresh_searcher`), `Searcher::search` (fused `all`, limit
//!   8) and `TenantMemory::record_search` (the retrieval batch), on a
//!   directory holding the archive.
//! - `search/http`: `POST /v1/search` with the same request on a keep-alive
//!   connection to `serve` on the same directory.
//!
//! At the end the ratios are printed: HTTP append throughput over
//! in-process (target ≥ 0.8) and the p50 overhead of an HTTP search over
//! an in-process one (target ≤ 0.2 ms).
//!
//! # Running
//!
//! ```text
//! cargo bench --bench serve            # the real measurement
//! cargo bench --bench serve -- --test  # quick check that everything runs
//! ```
//!
//! Directories are created under the system temporary directory (`TMPDIR`
//! moves them); it must be a real disk for fsync to mean anything. Every
//! search records a retrieval batch, fsynced, on both sides: on a real disk
//! the fsync dominates a search, and `TMPDIR=/dev/shm` leaves the compute
//! alone, where the HTTP overhead shows best.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use strataflow::pipeline::source::MessageInput;
use strataflow::pipeline::source::jsonl::parse_line;
use strataflow::{Channel, Memory, SearchOptions, SearchRequest};
use strataflow_testkit::synthetic::{SyntheticOptions, messages};

/// The allocator of the `strataflow` binary, so the in-process side runs
/// on what `serve` runs on.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Messages of the append benchmark's archive.
const APPEND_MESSAGES: u64 = 4_000;
/// Messages of the directory the searches run on.
const SEARCH_MESSAGES: u64 = 4_000;
/// Threads of the archives.
const THREADS: u32 = 16;
/// Appending clients.
const CLIENTS: usize = 4;
/// Messages per request.
const BATCH: usize = 100;
/// The server's default queue.
const QUEUE: usize = 4096;
const TENANT: &str = "tenant-00";
const QUERY: &str = "weather in Helsinki next week";

/// Timings collected beside criterion's, for the ratios.
#[derive(Default)]
struct Collected {
    append_http: Vec<Duration>,
    append_lib: Vec<Duration>,
    search_http: Vec<Duration>,
    search_lib: Vec<Duration>,
}

/// The archive as JSONL lines, cut per client (thread `k` to client
/// `k % CLIENTS`, file order kept) into batches of `BATCH`.
fn batches(n: u64) -> Vec<Vec<Vec<String>>> {
    let options = SyntheticOptions {
        messages: n,
        threads: THREADS,
        seed: 15,
        tenants: 1,
    };
    let mut owner: HashMap<String, usize> = HashMap::new();
    let mut streams: Vec<Vec<String>> = vec![Vec::new(); CLIENTS];
    for m in messages(&options) {
        let mut line = String::new();
        m.write_json_line(&mut line);
        let next = owner.len();
        let client = *owner.entry(m.thread.clone()).or_insert(next % CLIENTS);
        streams[client].push(line.trim_end().to_owned());
    }
    streams
        .into_iter()
        .map(|s| s.chunks(BATCH).map(<[String]>::to_vec).collect())
        .collect()
}

fn fresh_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("strataflow-bench-serve-")
        .tempdir()
        .expect("create a temporary directory")
}

/// A running `strataflow serve`.
struct Serve {
    child: Child,
    addr: String,
}

impl Serve {
    fn start(dir: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strataflow"))
            .arg("--data")
            .arg(dir)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env_remove("STRATAFLOW_DATA")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn strataflow serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = lines.next().expect("serve announces itself").unwrap();
        // Keep draining stdout.
        std::thread::spawn(move || for _ in lines {});
        let addr = line
            .strip_prefix("listening on http://")
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .to_owned();
        Self { child, addr }
    }

    /// SIGTERM and wait: the server drains and exits 0.
    fn stop(mut self) {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "serve exited with {status}");
    }
}

/// A keep-alive HTTP/1.1 connection.
struct Conn {
    addr: String,
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: &str) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        Self {
            addr: addr.to_owned(),
            reader: BufReader::new(stream),
        }
    }

    /// POSTs a JSON body; returns the status and the body.
    fn post(&mut self, path: &str, body: &str) -> (u16, String) {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let stream = self.reader.get_mut();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut length = None;
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = Some(value.trim().parse::<usize>().unwrap());
                }
                assert!(
                    !(name.eq_ignore_ascii_case("transfer-encoding")),
                    "chunked answers are not expected"
                );
            }
        }
        let mut body = vec![0; length.expect("a Content-Length")];
        self.reader.read_exact(&mut body).unwrap();
        (status, String::from_utf8(body).unwrap())
    }
}

/// One HTTP append run on a fresh directory; the time from the first
/// request to the last acknowledgement.
fn append_http(batches: &[Vec<Vec<String>>]) -> Duration {
    let dir = fresh_dir();
    let out = Command::new(env!("CARGO_BIN_EXE_strataflow"))
        .arg("--data")
        .arg(dir.path())
        .arg("init")
        .output()
        .unwrap();
    assert!(out.status.success());
    let server = Serve::start(dir.path());
    let bodies: Vec<Vec<String>> = batches
        .iter()
        .map(|client| {
            client
                .iter()
                .map(|b| format!("[{}]", b.join(",")))
                .collect()
        })
        .collect();
    let mut conns: Vec<Conn> = (0..CLIENTS).map(|_| Conn::open(&server.addr)).collect();
    let path = format!("/v1/messages?tenant={TENANT}");
    let start = Instant::now();
    std::thread::scope(|s| {
        for (conn, bodies) in conns.iter_mut().zip(&bodies) {
            let path = &path;
            s.spawn(move || {
                for body in bodies {
                    let (status, answer) = conn.post(path, body);
                    assert_eq!(status, 200, "{answer}");
                }
            });
        }
    });
    let took = start.elapsed();
    drop(conns);
    server.stop();
    took
}

/// The same batches through the library's streaming ingester.
fn append_in_process(
    runtime: &tokio::runtime::Runtime,
    inputs: &[Vec<Vec<MessageInput>>],
) -> Duration {
    let dir = fresh_dir();
    let memory = Memory::open(dir.path()).unwrap();
    let ingester = Arc::new(memory.ingester(QUEUE).unwrap());
    let inputs = inputs.to_vec();
    let took = runtime.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = inputs
            .into_iter()
            .map(|client| {
                let ingester = Arc::clone(&ingester);
                tokio::spawn(async move {
                    for batch in client {
                        let n = batch.len();
                        let acks = ingester.append_batch(batch).await.unwrap();
                        assert_eq!(acks.len(), n);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        start.elapsed()
    });
    let ingester = Arc::try_unwrap(ingester).ok().unwrap();
    runtime.block_on(ingester.close()).unwrap();
    took
}

fn parse(batches: &[Vec<Vec<String>>]) -> Vec<Vec<Vec<MessageInput>>> {
    batches
        .iter()
        .map(|client| {
            client
                .iter()
                .map(|b| {
                    b.iter()
                        .enumerate()
                        .map(|(i, l)| parse_line("bench", i + 1, l).unwrap())
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn bench_append(
    c: &mut Criterion,
    runtime: &tokio::runtime::Runtime,
    collected: &Mutex<Collected>,
) {
    let batches = batches(APPEND_MESSAGES);
    let inputs = parse(&batches);
    let mut group = c.benchmark_group("append");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.throughput(Throughput::Elements(APPEND_MESSAGES));
    group.bench_function("in_process", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let took = append_in_process(runtime, &inputs);
                    collected.lock().unwrap().append_lib.push(took);
                    took
                })
                .sum()
        });
    });
    group.bench_function("http", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let took = append_http(&batches);
                    collected.lock().unwrap().append_http.push(took);
                    took
                })
                .sum()
        });
    });
    group.finish();
}

fn bench_search(
    c: &mut Criterion,
    runtime: &tokio::runtime::Runtime,
    collected: &Mutex<Collected>,
) {
    let dir = fresh_dir();
    {
        let memory = Memory::open(dir.path()).unwrap();
        let ingester = memory.ingester(QUEUE).unwrap();
        let inputs = parse(&batches(SEARCH_MESSAGES));
        runtime.block_on(async {
            for batch in inputs.into_iter().flatten() {
                ingester.append_batch(batch).await.unwrap();
            }
            ingester.close().await.unwrap();
        });
    }
    let request = SearchRequest {
        query: QUERY.to_owned(),
        limit: Some(8),
        ..SearchRequest::default()
    };
    let options = SearchOptions {
        profile: None,
        channel: Channel::All,
    };
    let mut group = c.benchmark_group("search");
    {
        let memory = open_when_free(dir.path());
        let tenant = memory.tenant(TENANT);
        // What the server does: one searcher kept in memory, caught up with
        // the log (the batch each search records) before each search.
        let mut searcher = tenant.searcher(None).unwrap();
        assert!(!tenant.search(&request, &options).unwrap().hits.is_empty());
        group.bench_function("in_process", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    memory.refresh_searcher(&mut searcher).unwrap();
                    let hits = searcher.search(options.channel, &request).unwrap();
                    std::hint::black_box(
                        tenant
                            .record_search(options.channel, &request, hits)
                            .unwrap(),
                    );
                    let took = start.elapsed();
                    collected.lock().unwrap().search_lib.push(took);
                    total += took;
                }
                total
            });
        });
    }
    {
        let server = Serve::start(dir.path());
        let mut conn = Conn::open(&server.addr);
        let body = serde_json::json!({"tenant": TENANT, "query": QUERY, "limit": 8}).to_string();
        let (status, answer) = conn.post("/v1/search", &body);
        assert_eq!(status, 200, "{answer}");
        group.bench_function("http", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let (status, answer) = conn.post("/v1/search", &body);
                    let took = start.elapsed();
                    assert_eq!(status, 200, "{answer}");
                    collected.lock().unwrap().search_http.push(took);
                    total += took;
                }
                total
            });
        });
        drop(conn);
        server.stop();
    }
    group.finish();
}

/// Opens a directory once the closed ingester's thread has let go of it.
fn open_when_free(dir: &Path) -> Memory {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match Memory::open(dir) {
            Ok(memory) => return memory,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("cannot open {}: {e}", dir.display()),
        }
    }
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let collected = Mutex::new(Collected::default());
    let mut c = Criterion::default().configure_from_args();
    bench_append(&mut c, &runtime, &collected);
    bench_search(&mut c, &runtime, &collected);
    c.final_summary();
    let got = collected.lock().unwrap();
    let (http, lib) = (median(&got.append_http), median(&got.append_lib));
    let rate = |d: Duration| APPEND_MESSAGES as f64 / d.as_secs_f64().max(1e-9);
    eprintln!(
        "serve bench: append {} messages: http {:.0} msg/s, in-process {:.0} msg/s, ratio {:.2} (target >= 0.8); {} and {} runs",
        APPEND_MESSAGES,
        rate(http),
        rate(lib),
        rate(http) / rate(lib),
        got.append_http.len(),
        got.append_lib.len(),
    );
    let (http, lib) = (median(&got.search_http), median(&got.search_lib));
    eprintln!(
        "serve bench: search p50: http {:.3} ms, in-process {:.3} ms, overhead {:.3} ms (target <= 0.2 ms); {} and {} searches",
        http.as_secs_f64() * 1e3,
        lib.as_secs_f64() * 1e3,
        (http.as_secs_f64() - lib.as_secs_f64()) * 1e3,
        got.search_http.len(),
        got.search_lib.len(),
    );
}
