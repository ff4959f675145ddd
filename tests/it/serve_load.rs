//! Load (issue 15): 16 concurrent clients append a synthetic archive
//! through `POST /v1/messages` in batches of 1–100 while 4 clients search
//! for the whole run; afterwards the server's directory (stopped with
//! SIGTERM, exit 0) has the stats and view digests of an `ingest` of the
//! same file, and every message was acknowledged exactly once as new.
//!
//! Loopback only, bounded counts and time. `STRATAFLOW_LOAD_MESSAGES`
//! (default 50,000) sets the archive's size. The throughput and search
//! latencies are printed (`--nocapture`), never asserted.
//!
//! The driver is shared with `serve_crash`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common::{bin, ok, stats, view_digests};
use super::serve_support::{Reply, Server, try_request};

/// Appending clients.
pub const APPENDERS: usize = 16;
/// Searching clients.
pub const SEARCHERS: usize = 4;
/// Threads of the archive (spread over the appenders).
pub const THREADS: usize = 64;
/// Tenant of the synthetic archive.
pub const TENANT: &str = "tenant-00";
/// How long the whole load may take before the test gives up.
pub const LOAD_DEADLINE: Duration = Duration::from_secs(600);

/// Messages of the archive: `STRATAFLOW_LOAD_MESSAGES`, default 50,000.
pub fn load_messages() -> usize {
    std::env::var("STRATAFLOW_LOAD_MESSAGES")
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("STRATAFLOW_LOAD_MESSAGES `{v}` is not a count"))
        })
        .unwrap_or(50_000)
}

/// A small deterministic RNG (splitmix64), so batch sizes are a function
/// of the seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

/// One request of an appender.
pub struct Batch {
    /// The request body: the JSON array of the messages.
    pub body: String,
    /// Each message as a JSONL line, in the body's order.
    pub lines: Vec<String>,
}

/// The archive, and each appender's batches.
pub struct Plan {
    /// The JSONL file.
    pub file: PathBuf,
    /// Per appender, its batches in order.
    pub batches: Vec<Vec<Batch>>,
}

/// Writes the archive (`gen`) into `dir` and cuts it: thread `k` (by
/// first appearance) belongs to appender `k % APPENDERS`, whose messages
/// keep the file's order and are cut into batches of 1–100 by a seeded RNG.
pub fn plan(dir: &Path, messages: usize, seed: u64) -> Plan {
    let file = dir.join("archive.jsonl");
    let out = bin()
        .args(["gen", "--messages", &messages.to_string()])
        .args([
            "--threads",
            &THREADS.to_string(),
            "--seed",
            &seed.to_string(),
        ])
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let mut owner: HashMap<String, usize> = HashMap::new();
    let mut streams: Vec<Vec<Value>> = vec![Vec::new(); APPENDERS];
    let mut count = 0;
    for line in text.lines() {
        let message: Value = serde_json::from_str(line).unwrap();
        assert_eq!(message["tenant"], TENANT, "one tenant: {line}");
        let thread = message["thread"].as_str().unwrap().to_owned();
        let next = owner.len();
        let appender = *owner.entry(thread).or_insert(next % APPENDERS);
        streams[appender].push(message);
        count += 1;
    }
    assert_eq!(count, messages);
    let mut rng = Rng::new(seed);
    let batches = streams
        .into_iter()
        .map(|stream| {
            let mut batches = Vec::new();
            let mut rest = stream.as_slice();
            while !rest.is_empty() {
                let n = rng.between(1, 100).min(rest.len());
                let (batch, after) = rest.split_at(n);
                batches.push(Batch {
                    body: Value::Array(batch.to_vec()).to_string(),
                    lines: batch.iter().map(Value::to_string).collect(),
                });
                rest = after;
            }
            batches
        })
        .collect();
    Plan { file, batches }
}

/// Where the server is (its port changes when it is restarted).
pub type Addr = Arc<RwLock<String>>;

/// What the appenders and searchers saw.
#[derive(Default)]
pub struct Outcome {
    /// Every acknowledged message: (id, new, the `epoch` when its request
    /// was sent, the appender), in ack order per appender.
    pub acks: Vec<(String, bool, u64, usize)>,
    /// The JSONL line of every acknowledged id.
    pub lines: HashMap<String, String>,
    /// Wall time of the append phase.
    pub append_time: Duration,
    /// Requests answered other than 200 or not answered (then retried).
    pub append_retries: u64,
    /// Latencies of searches answered 200 during the append phase.
    pub search_latencies: Vec<Duration>,
    /// Searches not answered 200.
    pub search_failures: u64,
}

/// Queries of the searchers (words of the synthetic archive).
const QUERIES: &[&str] = &[
    "weather in Helsinki",
    "Raven launch moved up",
    "visit Warsaw next Thursday",
    "boss wants the launch",
    "trip planning",
    "dinner recipe",
    "garden tomatoes",
    "dog vet appointment",
];

/// One search; its latency when answered 200.
pub fn search_once(addr: &str, query: &str) -> Option<Duration> {
    let body = serde_json::json!({"tenant": TENANT, "query": query, "limit": 8}).to_string();
    let start = Instant::now();
    match try_request(addr, "POST", "/v1/search", None, Some(&body)) {
        Ok(reply) if reply.status == 200 => Some(start.elapsed()),
        _ => None,
    }
}

/// One append; the acks when answered 200.
fn append_once(addr: &str, body: &str) -> Option<Vec<(String, bool)>> {
    let path = format!("/v1/messages?tenant={TENANT}");
    let reply: Reply = try_request(addr, "POST", &path, None, Some(body)).ok()?;
    if reply.status != 200 {
        assert!(
            reply.status == 503,
            "an append may only be refused as unavailable: {} {}",
            reply.status,
            reply.body
        );
        return None;
    }
    let json = reply.json();
    let acks = json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["new"].as_bool().unwrap(),
            )
        })
        .collect();
    Some(acks)
}

/// Runs the appenders (each sending its batches in order, retrying a
/// batch until it is acknowledged) and the searchers (until the appenders
/// are done). `during` runs on the calling thread meanwhile, with the
/// number of batches acknowledged so far (the crash test kills and
/// restarts the server there, moving `epoch` on first).
pub fn drive(
    plan: &Plan,
    addr: &Addr,
    epoch: &AtomicU64,
    during: impl FnOnce(&AtomicU64),
) -> Outcome {
    let done = AtomicBool::new(false);
    let acked_batches = AtomicU64::new(0);
    let deadline = Instant::now() + LOAD_DEADLINE;
    let start = Instant::now();
    std::thread::scope(|s| {
        let searchers: Vec<_> = (0..SEARCHERS)
            .map(|k| {
                let (done, addr) = (&done, addr);
                s.spawn(move || {
                    let mut latencies = Vec::new();
                    let mut failures = 0u64;
                    let mut i = k;
                    while !done.load(Ordering::SeqCst) {
                        let at = addr.read().unwrap().clone();
                        match search_once(&at, QUERIES[i % QUERIES.len()]) {
                            Some(took) => latencies.push(took),
                            None => {
                                failures += 1;
                                std::thread::sleep(Duration::from_millis(50));
                            }
                        }
                        i += 1;
                    }
                    (latencies, failures)
                })
            })
            .collect();
        let appenders: Vec<_> = plan
            .batches
            .iter()
            .enumerate()
            .map(|(client, batches)| {
                let (addr, acked_batches) = (addr, &acked_batches);
                s.spawn(move || {
                    let mut acks = Vec::new();
                    let mut lines = HashMap::new();
                    let mut retries = 0u64;
                    for batch in batches {
                        loop {
                            assert!(
                                Instant::now() < deadline,
                                "the load took over {LOAD_DEADLINE:?}"
                            );
                            let sent_in = epoch.load(Ordering::SeqCst);
                            let at = addr.read().unwrap().clone();
                            if let Some(got) = append_once(&at, &batch.body) {
                                assert_eq!(got.len(), batch.lines.len(), "one ack per message");
                                for ((id, _), line) in got.iter().zip(&batch.lines) {
                                    lines.insert(id.clone(), line.clone());
                                }
                                acks.extend(
                                    got.into_iter().map(|(id, new)| (id, new, sent_in, client)),
                                );
                                acked_batches.fetch_add(1, Ordering::SeqCst);
                                break;
                            }
                            retries += 1;
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                    (acks, lines, retries)
                })
            })
            .collect();
        during(&acked_batches);
        let mut outcome = Outcome::default();
        for a in appenders {
            let (acks, lines, retries) = a.join().unwrap();
            outcome.acks.extend(acks);
            outcome.lines.extend(lines);
            outcome.append_retries += retries;
        }
        outcome.append_time = start.elapsed();
        done.store(true, Ordering::SeqCst);
        for h in searchers {
            let (latencies, failures) = h.join().unwrap();
            outcome.search_latencies.extend(latencies);
            outcome.search_failures += failures;
        }
        outcome
    })
}

/// p50 and p99 of latencies, in milliseconds.
pub fn percentiles(latencies: &[Duration]) -> (f64, f64) {
    if latencies.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut sorted = latencies.to_vec();
    sorted.sort();
    let at = |q: f64| {
        let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        sorted[i].as_secs_f64() * 1000.0
    };
    (at(0.50), at(0.99))
}

/// The reference end state: an `ingest` into a fresh directory of the
/// archive file itself, in its own interleaving of threads. The served log
/// interleaves the threads however the clients raced, but keeps the file's
/// order within each thread (asserted here), and no view depends on more
/// than that: the weights view counts turns in the order messages were
/// said, and the search view's content is the set of what it indexes.
pub fn reference(dir: &Path, served: &Path, plan: &Plan, outcome: &Outcome) -> PathBuf {
    let by_thread = |lines: &mut dyn Iterator<Item = String>| {
        let mut threads: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for line in lines {
            let v: Value = serde_json::from_str(&line).unwrap();
            let thread = v["thread"].as_str().unwrap().to_owned();
            threads.entry(thread).or_default().push(v.to_string());
        }
        threads
    };
    let served_lines: Vec<String> = stored_messages(served)
        .iter()
        .map(|id| {
            outcome
                .lines
                .get(id)
                .unwrap_or_else(|| panic!("stored message {id} was never acknowledged"))
                .clone()
        })
        .collect();
    let original = std::fs::read_to_string(&plan.file).unwrap();
    assert_eq!(
        by_thread(&mut served_lines.iter().cloned()),
        by_thread(&mut original.lines().map(str::to_owned)),
        "the served log keeps the file's messages and their order within each thread"
    );
    assert_ne!(
        served_lines,
        original.lines().map(str::to_owned).collect::<Vec<_>>(),
        "the clients raced: the served log interleaves the threads otherwise than the file"
    );
    let data = dir.join("reference");
    ok(&data, &["ingest", plan.file.to_str().unwrap(), "--quiet"]);
    data
}

/// `stats --json` without what depends on the log's order or on the
/// searches (bytes on disk, the sequence, total and retrieval records):
/// returned beside the retrieval count.
fn comparable_stats(data: &Path) -> (Value, u64) {
    let mut s = stats(data);
    let retrievals = s["records"]["retrieval"].as_u64().unwrap();
    let object = s.as_object_mut().unwrap();
    for volatile in ["bytes_on_disk", "last_seq", "total_records"] {
        object.remove(volatile);
    }
    object["records"]
        .as_object_mut()
        .unwrap()
        .remove("retrieval");
    (s, retrievals)
}

/// Asserts the served directory equals the reference: stats (but the
/// retrieval batches the searches recorded, returned) and the digest of
/// every view of every tenant (at least the five of the default profile).
pub fn assert_same_end_state(served: &Path, reference: &Path) -> u64 {
    let (got, retrievals) = comparable_stats(served);
    let (want, none) = comparable_stats(reference);
    assert_eq!(none, 0);
    assert_eq!(
        got, want,
        "stats of the served directory differ from an ingest"
    );
    let digests = |d: &Path| -> BTreeMap<(String, String), String> {
        view_digests(d)
            .into_iter()
            .map(|(view, tenant, _, digest)| ((view, tenant), digest))
            .collect()
    };
    let (got, want) = (digests(served), digests(reference));
    for view in [
        "event_status",
        "weights",
        "graph_membership",
        "block_levels",
        "search",
    ] {
        assert!(
            got.keys()
                .any(|(v, _)| v == view || v.starts_with(&format!("{view}/"))),
            "view {view} compared: {got:?}"
        );
    }
    assert_eq!(
        got, want,
        "view digests of the served directory differ from an ingest of the file"
    );
    retrievals
}

/// The message ids of a directory's log, in log order (read through the
/// library).
pub fn stored_messages(data: &Path) -> Vec<String> {
    let store = strataflow::log::Store::open(data).unwrap();
    store
        .scan(1)
        .map(|r| r.unwrap())
        .filter(|r| matches!(r.record, strataflow::log::record::Record::Message(_)))
        .map(|r| r.id.to_hex())
        .collect()
}

/// Idle search latencies: `n` searches, one after the other.
pub fn idle_searches(addr: &str, n: usize) -> Vec<Duration> {
    (0..n)
        .map(|i| search_once(addr, QUERIES[i % QUERIES.len()]).expect("an idle search is answered"))
        .collect()
}

#[test]
fn sixteen_appenders_and_four_searchers_lose_and_duplicate_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let n = load_messages();
    let plan = plan(tmp.path(), n, 15);
    let batches: usize = plan.batches.iter().map(Vec::len).sum();
    let served = tmp.path().join("served");
    ok(&served, &["init"]);
    let server = Server::start(&served, &[]);
    let addr: Addr = Arc::new(RwLock::new(server.addr.clone()));

    let outcome = drive(&plan, &addr, &AtomicU64::new(0), |_| {});
    let idle = idle_searches(&server.addr, 10);
    let status = server.stop();
    assert!(status.success(), "serve stopped on SIGTERM with {status}");

    // 0 lost, 0 duplicated: every message acknowledged once, as new.
    assert_eq!(outcome.append_retries, 0, "no append was refused");
    assert_eq!(outcome.acks.len(), n);
    let mut seen = BTreeSet::new();
    for (id, new, _, _) in &outcome.acks {
        assert!(*new, "message {id} acknowledged as already stored");
        assert!(seen.insert(id.clone()), "message {id} acknowledged twice");
    }
    let stored = stored_messages(&served);
    assert_eq!(stored.len(), n, "every message stored once");
    assert_eq!(
        seen,
        stored.into_iter().collect(),
        "the stored messages are the acknowledged ones"
    );
    let started = Instant::now();
    let reference = reference(tmp.path(), &served, &plan, &outcome);
    let ingest_time = started.elapsed();
    let retrievals = assert_same_end_state(&served, &reference);
    assert_eq!(
        outcome.search_failures, 0,
        "every search under load was answered"
    );
    assert_eq!(
        retrievals,
        (outcome.search_latencies.len() + idle.len()) as u64,
        "one retrieval batch per search"
    );

    let (p50, p99) = percentiles(&outcome.search_latencies);
    let (idle50, idle99) = percentiles(&idle);
    eprintln!(
        "serve_load: {n} messages in {batches} batches from {APPENDERS} clients in {:.1} s = {:.0} appends/s (an ingest of the same messages: {:.1} s = {:.0}/s); \
         search under load: {} searches, p50 {p50:.1} ms, p99 {p99:.1} ms; idle: p50 {idle50:.1} ms, p99 {idle99:.1} ms",
        outcome.append_time.as_secs_f64(),
        n as f64 / outcome.append_time.as_secs_f64(),
        ingest_time.as_secs_f64(),
        n as f64 / ingest_time.as_secs_f64(),
        outcome.search_latencies.len(),
    );
}

/// Concurrent searches alike each get their own retrieval batch (the
/// batch's ordinal is the count of batches plus one: read and written by
/// two searches at once, both made the same record, so they shared one
/// batch and the stats counted one search).
#[test]
fn concurrent_searches_alike_get_their_own_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("a.jsonl");
    super::common::write_lines(&file, &super::common::archive(2, 13));
    ok(&data, &["ingest", file.to_str().unwrap(), "--quiet"]);
    let server = Server::start(&data, &[]);
    let (clients, each) = (8, 10);
    let batches: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|_| {
                s.spawn(|| {
                    (0..each)
                        .map(|_| {
                            let reply = server.post(
                                "/v1/search",
                                None,
                                &serde_json::json!({"query": "Marta in Lisbon", "limit": 3}),
                            );
                            assert_eq!(reply.status, 200, "{}", reply.body);
                            reply.json()["batch"].as_str().unwrap().to_owned()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let distinct: BTreeSet<&String> = batches.iter().collect();
    assert_eq!(
        distinct.len(),
        clients * each,
        "every search has its own batch"
    );
    assert!(server.stop().success());
    assert_eq!(stats(&data)["records"]["retrieval"], clients * each);
}
