//! Query latency of `search events` ([`EventIndex::search`]) over a million
//! synthetic events, against tantivy on the same documents as the anchor.
//!
//! # What is measured
//!
//! `N` synthetic events (1 000 000 by default) are generated
//! deterministically (a fixed-seed xorshift generator, no I/O):
//!
//! - a vocabulary of 20 000 pseudo-words (2–4 syllables), drawn with a
//!   Zipf-like skew, word rank `⌊V · u³⌋` for uniform `u` (the most common
//!   word is about 3.7 % of all words, as "the" is in English text);
//! - title 5–10 words, summary 15–40 words, 1–2 quotes of 6–14 words, 2–4
//!   tags (from the 2 000 most common words), a narrative of 20–60 words on
//!   half of the events, 1–3 participants out of 300 person names, one of the
//!   11 event types, an occurrence date on 70 % and a time expression
//!   ("last Saturday", …) on 40 % of them.
//!
//! Both indexes are built once, outside any timing; the bench prints how
//! long each build took and the process peak RSS (`VmHWM`) after each.
//!
//! 500 deterministic queries of 1–4 words are drawn from the same
//! vocabulary: each word is, with probability 0.45, a Zipf draw (frequent
//! words, long posting lists), 0.45 a uniform draw over the vocabulary
//! (mostly rare words) and 0.10 a participant's first or last name.
//!
//! - **Latency percentiles**: every query is run once through each system
//!   (the sanity pass below, which doubles as warm-up), then [`PASSES`]
//!   timed pass over all queries, each query timed on its own with
//!   [`Instant`]; the bench prints p50 / p90 / p99 / max / mean per system
//!   and the ratios strataflow / tantivy (criterion reports means only, and
//!   the acceptance asks for p50 and p99). With 500 queries, p99 is the
//!   5th slowest.
//! - **Criterion** `search_events/strataflow` and `search_events/tantivy`
//!   (flat sampling, 10 samples, 20 s): each iteration runs the next query
//!   of the cycle, so the mean is the mean time per query over the queries
//!   visited. Tantivy goes round the cycle many times; at 1M events
//!   strataflow visits only the first few hundred queries, so its criterion
//!   mean follows the percentile table's mean only roughly (the latencies
//!   are heavy-tailed). The table is the figure of record.
//!
//! `strataflow` is the whole [`EventIndex::search`] with
//! [`EventQuery::text`] (limit 6): tokenizing, candidate selection, BM25
//! over every match, RRF and truncation. `tantivy` is parsing the same text
//! with a [`QueryParser`] over the nine fields plus a top-6 collection on a
//! single-threaded searcher, over an in-RAM index merged into one segment.
//! The bench also prints, as a sanity check that both see the same
//! documents, how many queries each answers with nothing and the mean
//! overlap of the two top-6 sets.
//!
//! # Why tantivy is the anchor, and how the scoring differs
//!
//! Absolute latencies depend on the CPU and its caches; tantivy, a mature
//! Rust BM25 engine, run on the same documents, the same queries and the
//! same machine in the same process, gives a floor to compare against: the
//! ratio strataflow / tantivy is the number to watch.
//!
//! Both rank by field-weighted BM25 with `k1 = 1.2`, `b = 0.75`, but not
//! the same formula. Strataflow repeats each field's tokens by the field's
//! weight ([`event_fields`]: title 4, summary 3, tags 2, quotes 2, narrative
//! 1, participants 5, event type 5, original time text 4, dates 4) and
//! scores the resulting single bag of tokens, i.e. one BM25 with weighted
//! term frequencies and a weighted document length. Tantivy indexes the
//! nine texts as nine `TEXT` fields and the query parser (OR of the words,
//! each over every field, with `set_field_boost` equal to those weights)
//! *sums per-field BM25 scores*, each with its own field length, average
//! length and document frequency — not BM25F. Tantivy's default tokenizer
//! (split on non-alphanumerics, lower-case) and strataflow's (NFKC, UAX #29
//! words) agree on the pseudo-words and names; they differ on the dates and
//! on `task_completed`, which no query uses. Tantivy also prunes with
//! block-max WAND for top-k, whereas strataflow scores every match and
//! then fuses; that difference is part of what the ratio measures.
//!
//! # Running
//!
//! ```text
//! cargo bench --features bench-anchors --bench search            # 1M events: ~5–6 min, peak RSS ~3.7 GiB
//! cargo bench --features bench-anchors --bench search -- --test  # quick check: 20 000 events
//! STRATAFLOW_BENCH_EVENTS=200000 cargo bench --features bench-anchors --bench search
//! ```
//!
//! `STRATAFLOW_BENCH_EVENTS` sets `N` (it wins over the `--test` default of
//! 20 000).

#![allow(clippy::expect_used)]

use std::collections::HashSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use strataflow_log::record::{
    Criticality, Event, EventTemporal, EventType, Occurrence, Precision, Scope, TimeBasis,
};
use strataflow_log::{RecordId, SourceTime, Timestamp};
use strataflow_materializers::event_status::EventStatus;
use strataflow_materializers::search::{EventDoc, EventIndex, EventQuery, event_fields};
use tantivy::collector::TopDocs;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::QueryParser;
use tantivy::schema::{FAST, Field, Schema, TEXT};
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument};

/// Events generated by default.
const DEFAULT_EVENTS: usize = 1_000_000;
/// Events generated under `--test` (CI smoke mode).
const TEST_EVENTS: usize = 20_000;
/// Words in the vocabulary.
const VOCABULARY: usize = 20_000;
/// Distinct person names.
const PEOPLE: usize = 300;
/// Queries in the mix.
const QUERIES: usize = 500;
/// Results per query (the `search events` default).
const LIMIT: usize = 6;
/// Timed passes over all queries for the percentiles (after the sanity
/// pass, which doubles as warm-up).
const PASSES: usize = 1;
/// Indexing memory budget of the tantivy writer, in bytes.
const TANTIVY_BUDGET: usize = 500_000_000;
/// Mentioned-at time of event 0 (2024-01-01T00:00:00Z), in ms.
const START_MS: i64 = 1_704_067_200_000;
/// Time expressions used as `original_text`.
const TIME_TEXTS: [&str; 12] = [
    "yesterday",
    "last Saturday",
    "two weeks ago",
    "this morning",
    "last month",
    "in March",
    "next Monday",
    "on Friday",
    "three days ago",
    "last week",
    "earlier today",
    "at the end of the quarter",
];
/// The 11 event types.
const EVENT_TYPES: [EventType; 11] = [
    EventType::Decision,
    EventType::Release,
    EventType::TaskCompleted,
    EventType::Plan,
    EventType::Change,
    EventType::Cancellation,
    EventType::Incident,
    EventType::Meeting,
    EventType::Collaboration,
    EventType::Migration,
    EventType::Other,
];

/// xorshift64 with a fixed seed: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// Uniform in `lo..=hi`.
    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// The `i`-th item of a list (empty if out of range, which never happens).
fn pick(list: &[String], i: usize) -> &str {
    list.get(i).map_or("", String::as_str)
}

/// Syllables of the pseudo-words (lower-case ASCII letters only, so both
/// tokenizers see one token per word).
const ONSETS: [&str; 20] = [
    "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "br", "st", "tr",
    "pl", "gr",
];
const VOWELS: [&str; 8] = ["a", "e", "i", "o", "u", "ai", "ea", "ou"];
const CODAS: [&str; 6] = ["", "", "n", "r", "s", "l"];

/// One pseudo-word of `lo..=hi` syllables.
fn pseudo_word(rng: &mut Rng, lo: usize, hi: usize) -> String {
    let mut w = String::new();
    for _ in 0..rng.between(lo, hi) {
        w.push_str(ONSETS.get(rng.below(ONSETS.len())).copied().unwrap_or("b"));
        w.push_str(VOWELS.get(rng.below(VOWELS.len())).copied().unwrap_or("a"));
        w.push_str(CODAS.get(rng.below(CODAS.len())).copied().unwrap_or(""));
    }
    w
}

/// The generated corpus vocabulary and people.
struct Lexicon {
    /// By Zipf rank: index 0 is the most frequent word.
    words: Vec<String>,
    /// "First Last", capitalized.
    people: Vec<String>,
}

impl Lexicon {
    fn new(rng: &mut Rng) -> Self {
        let mut seen = HashSet::new();
        let mut words = Vec::with_capacity(VOCABULARY);
        while words.len() < VOCABULARY {
            let w = pseudo_word(rng, 2, 4);
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let capital = |s: String| {
            let mut c = s.chars();
            c.next().map_or(String::new(), |f| {
                f.to_ascii_uppercase().to_string() + c.as_str()
            })
        };
        let mut people = Vec::with_capacity(PEOPLE);
        while people.len() < PEOPLE {
            let first = pseudo_word(rng, 2, 2);
            let last = pseudo_word(rng, 3, 3);
            // Names are not vocabulary words, and are unique.
            if seen.insert(first.clone()) | seen.insert(last.clone()) {
                people.push(format!("{} {}", capital(first), capital(last)));
            }
        }
        Self { words, people }
    }

    /// A word with the Zipf-like skew of the corpus.
    fn zipf(&self, rng: &mut Rng) -> &str {
        let u = rng.unit();
        pick(&self.words, (VOCABULARY as f64 * u * u * u) as usize)
    }

    /// `lo..=hi` skewed words joined by spaces, ending with `end`.
    fn text(&self, rng: &mut Rng, lo: usize, hi: usize, end: &str) -> String {
        let count = rng.between(lo, hi);
        let mut s = String::with_capacity(count * 8);
        for i in 0..count {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(self.zipf(rng));
        }
        s.push_str(end);
        s
    }

    /// A participant, mildly skewed towards the first names of the list.
    fn person(&self, rng: &mut Rng) -> &str {
        let u = rng.unit();
        pick(&self.people, (PEOPLE as f64 * u * u) as usize)
    }
}

/// A content-hash-like record id for event `n`.
fn event_id(n: usize) -> RecordId {
    RecordId(*blake3::hash(&(n as u64).to_le_bytes()).as_bytes())
}

/// Synthetic event number `n`.
fn synthetic_event(lex: &Lexicon, rng: &mut Rng, n: usize) -> Event {
    let title = lex.text(rng, 5, 10, "");
    let summary = lex.text(rng, 15, 40, ".");
    let quotes = (0..rng.between(1, 2))
        .map(|_| lex.text(rng, 6, 14, "."))
        .collect();
    let tags = (0..rng.between(2, 4))
        .map(|_| {
            let u = rng.unit();
            pick(&lex.words, (2_000.0 * u * u) as usize).to_owned()
        })
        .collect();
    let narrative = if rng.chance(0.5) {
        lex.text(rng, 20, 60, ".")
    } else {
        String::new()
    };
    let participants = (0..rng.between(1, 3))
        .map(|_| lex.person(rng).to_owned())
        .collect();
    let mentioned = START_MS + n as i64 * 60_000;
    let day = 86_400_000;
    let (happened_start, happened_end, precision) = if rng.chance(0.7) {
        let start = mentioned - rng.below(60) as i64 * day;
        if rng.chance(0.3) {
            let end = start + rng.between(1, 5) as i64 * day;
            (
                Some(Timestamp(start)),
                Some(Timestamp(end)),
                Precision::Range,
            )
        } else {
            (Some(Timestamp(start)), None, Precision::Day)
        }
    } else {
        (None, None, Precision::Unknown)
    };
    let original_text = (happened_start.is_some() && rng.chance(0.4)).then(|| {
        TIME_TEXTS
            .get(rng.below(TIME_TEXTS.len()))
            .copied()
            .unwrap_or("yesterday")
            .to_owned()
    });
    let basis = if original_text.is_some() {
        TimeBasis::Relative
    } else if happened_start.is_some() {
        TimeBasis::Explicit
    } else {
        TimeBasis::Unknown
    };
    let event_type = EVENT_TYPES
        .get(rng.below(EVENT_TYPES.len()))
        .copied()
        .unwrap_or(EventType::Other);
    Event {
        tenant: "bench".to_owned(),
        block: event_id(n + 1_000_000_000),
        source_messages: vec![event_id(n + 2_000_000_000)],
        title,
        summary,
        narrative,
        tags,
        quotes,
        temporal: EventTemporal {
            mentioned_at: SourceTime::utc_without_offset(mentioned),
            happened_start,
            happened_end,
            original_text,
            precision,
            basis,
            status: Occurrence::Occurred,
            participants,
            event_type,
            supersedes: Vec::new(),
            conflicts_with: Vec::new(),
        },
        scope: Scope::Project,
        criticality: Criticality::Routine,
        confidence_milli: 900,
    }
}

/// The query mix (see the module docs).
fn queries(lex: &Lexicon, rng: &mut Rng) -> Vec<String> {
    (0..QUERIES)
        .map(|_| {
            let words: Vec<&str> = (0..rng.between(1, 4))
                .map(|_| {
                    let r = rng.unit();
                    if r < 0.45 {
                        lex.zipf(rng)
                    } else if r < 0.90 {
                        pick(&lex.words, rng.below(VOCABULARY))
                    } else {
                        let name = lex.person(rng);
                        let mut parts = name.split(' ');
                        let first = parts.next().unwrap_or(name);
                        if rng.chance(0.5) {
                            first
                        } else {
                            parts.next().unwrap_or(first)
                        }
                    }
                })
                .collect();
            words.join(" ")
        })
        .collect()
}

/// A `Vm*` line of `/proc/self/status`, e.g. `VmHWM`, in MiB.
fn proc_status_mib(key: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Prints the current and peak RSS.
fn print_memory(after: &str) {
    let show = |v: Option<f64>| v.map_or_else(|| "?".to_owned(), |m| format!("{m:.0} MiB"));
    println!(
        "  memory after {after}: VmRSS {}, peak VmHWM {}",
        show(proc_status_mib("VmRSS:")),
        show(proc_status_mib("VmHWM:"))
    );
}

/// The tantivy side: an in-RAM index of the same field texts.
struct Tantivy {
    reader: IndexReader,
    parser: QueryParser,
}

/// The tantivy fast field holding each doc's event number.
const NUMBER_FIELD: &str = "n";

/// Schema field names, in the order of [`event_fields`].
const TANTIVY_FIELDS: [&str; 9] = [
    "title",
    "summary",
    "tags",
    "quotes",
    "narrative",
    "participants",
    "event_type",
    "original_text",
    "dates",
];

impl Tantivy {
    /// Indexes `events` (doc `n` carries `n` in the fast field `n`), merges
    /// into one segment and opens a reader.
    fn build(events: &[Event]) -> tantivy::Result<Self> {
        let mut sb = Schema::builder();
        let fields: Vec<Field> = TANTIVY_FIELDS
            .iter()
            .map(|name| sb.add_text_field(name, TEXT))
            .collect();
        let number = sb.add_u64_field(NUMBER_FIELD, FAST);
        let index = Index::create_in_ram(sb.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(2, TANTIVY_BUDGET)?;
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let mut boosts = Vec::new();
        let started = Instant::now();
        for (n, e) in events.iter().enumerate() {
            let texts = event_fields(e);
            if n == 0 {
                boosts = texts.iter().map(|(_, w)| *w).collect();
            }
            let mut doc = TantivyDocument::default();
            for (field, (text, _)) in fields.iter().zip(texts) {
                if !text.is_empty() {
                    doc.add_text(*field, text);
                }
            }
            doc.add_u64(number, n as u64);
            writer.add_document(doc)?;
        }
        writer.commit()?;
        let segments = index.searchable_segment_ids()?;
        println!(
            "  tantivy: {} docs added and committed in {:.1?} ({} segments)",
            events.len(),
            started.elapsed(),
            segments.len()
        );
        let merge = Instant::now();
        if segments.len() > 1 {
            writer.merge(&segments).wait()?;
        }
        writer.wait_merging_threads()?;
        println!(
            "  tantivy: merged into one segment in {:.1?}",
            merge.elapsed()
        );
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let mut parser = QueryParser::for_index(&index, fields.clone());
        for (field, boost) in fields.iter().zip(boosts) {
            parser.set_field_boost(*field, boost as f32);
        }
        Ok(Self { reader, parser })
    }

    /// Top-6 doc addresses of a query (parse and search, as timed).
    fn search(&self, searcher: &tantivy::Searcher, text: &str) -> Vec<(f32, DocAddress)> {
        let query = self.parser.parse_query(text).expect("query parses");
        searcher
            .search(&*query, &TopDocs::with_limit(LIMIT).order_by_score())
            .expect("search succeeds")
    }

    /// The event numbers of search results.
    fn event_numbers(&self, searcher: &tantivy::Searcher, hits: &[(f32, DocAddress)]) -> Vec<u64> {
        hits.iter()
            .filter_map(|(_, a)| {
                let column = searcher
                    .segment_reader(a.segment_ord)
                    .fast_fields()
                    .u64(NUMBER_FIELD)
                    .ok()?;
                column.first(a.doc_id)
            })
            .collect()
    }
}

/// Latency summary of one system.
struct Latencies {
    sorted: Vec<Duration>,
}

impl Latencies {
    fn new(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        Self { sorted: samples }
    }

    /// Nearest-rank percentile, `p` in `(0, 1]`.
    fn percentile(&self, p: f64) -> Duration {
        let n = self.sorted.len();
        let rank = ((p * n as f64).ceil() as usize).clamp(1, n.max(1));
        self.sorted.get(rank - 1).copied().unwrap_or_default()
    }

    fn mean(&self) -> Duration {
        let total: Duration = self.sorted.iter().sum();
        total / u32::try_from(self.sorted.len().max(1)).unwrap_or(u32::MAX)
    }

    /// p50, p90, p99, max, mean.
    fn row(&self) -> [Duration; 5] {
        [
            self.percentile(0.50),
            self.percentile(0.90),
            self.percentile(0.99),
            self.percentile(1.0),
            self.mean(),
        ]
    }
}

/// Times `run` on every query, [`PASSES`] times.
fn time_queries<R>(count: usize, mut run: impl FnMut(usize) -> R) -> Latencies {
    let mut samples = Vec::with_capacity(count * PASSES);
    for _ in 0..PASSES {
        for i in 0..count {
            let started = Instant::now();
            black_box(run(i));
            samples.push(started.elapsed());
        }
    }
    Latencies::new(samples)
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let test_mode = std::env::args().any(|a| a == "--test");
    let n = std::env::var("STRATAFLOW_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(if test_mode {
            TEST_EVENTS
        } else {
            DEFAULT_EVENTS
        });

    println!("search bench: {n} synthetic events, {QUERIES} queries, top {LIMIT}");
    let mut rng = Rng::new(0x5eed_0f57_a7a0_f10d_u64);
    let lex = Lexicon::new(&mut rng);
    let started = Instant::now();
    let events: Vec<Event> = (0..n).map(|i| synthetic_event(&lex, &mut rng, i)).collect();
    println!("  generated {n} events in {:.1?}", started.elapsed());
    print_memory("generating");
    let texts = queries(&lex, &mut rng);

    let started = Instant::now();
    let tantivy = Tantivy::build(&events).expect("tantivy index builds");
    println!("  tantivy: index built in {:.1?}", started.elapsed());
    print_memory("the tantivy index");

    let started = Instant::now();
    let mut index = EventIndex::new();
    for (i, event) in events.into_iter().enumerate() {
        index.insert(EventDoc {
            id: event_id(i),
            event,
            status: EventStatus::Active,
            thread: format!("thread-{}", i % 1_000),
            weight: (i % 97) as f64 / 97.0,
        });
    }
    println!(
        "  strataflow: EventIndex built in {:.1?}",
        started.elapsed()
    );
    print_memory("the EventIndex");

    let ours: Vec<EventQuery> = texts.iter().map(EventQuery::text).collect();
    let searcher = tantivy.reader.searcher();
    assert_eq!(searcher.num_docs(), n as u64, "tantivy holds every event");
    assert_eq!(index.len(), n, "EventIndex holds every event");

    // Sanity (and warm-up: every query once through each system): both
    // systems see the same documents.
    let ids: Vec<RecordId> = (0..n).map(event_id).collect();
    let (mut ours_empty, mut theirs_empty, mut overlap) = (0usize, 0usize, 0usize);
    for (q, text) in ours.iter().zip(&texts) {
        let a: HashSet<RecordId> = index.search(q).into_iter().map(|(id, _)| id).collect();
        let hits = tantivy.search(&searcher, text);
        let b: Vec<RecordId> = tantivy
            .event_numbers(&searcher, &hits)
            .into_iter()
            .filter_map(|k| usize::try_from(k).ok().and_then(|k| ids.get(k)).copied())
            .collect();
        ours_empty += usize::from(a.is_empty());
        theirs_empty += usize::from(b.is_empty());
        overlap += b.iter().filter(|id| a.contains(id)).count();
    }
    println!(
        "  sanity: queries with no hit: strataflow {ours_empty}, tantivy {theirs_empty}; \
         mean top-{LIMIT} overlap {:.2} of {LIMIT}",
        overlap as f64 / QUERIES as f64
    );

    println!("per-query latency ({PASSES} timed pass over {QUERIES} queries, after the warm-up):");
    let strataflow = time_queries(ours.len(), |i| ours.get(i).map(|q| index.search(q)));
    let anchor = time_queries(texts.len(), |i| {
        texts.get(i).map(|t| tantivy.search(&searcher, t))
    });
    let (s, t) = (strataflow.row(), anchor.row());
    let table = {
        let mut out = format!(
            "  {:<12} {:>12} {:>12} {:>12} {:>12} {:>12}\n",
            "system", "p50", "p90", "p99", "max", "mean"
        );
        for (name, row) in [("strataflow", s), ("tantivy", t)] {
            out.push_str(&format!("  {name:<12}"));
            for d in row {
                out.push_str(&format!(" {:>12}", ms(d)));
            }
            out.push('\n');
        }
        out.push_str(&format!("  {:<12}", "ratio s/t"));
        for (a, b) in s.iter().zip(t) {
            let ratio = a.as_secs_f64() / b.as_secs_f64().max(1e-12);
            out.push_str(&format!(" {:>11.1}x", ratio));
        }
        out
    };
    println!("{table}");

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();
    {
        let mut group = c.benchmark_group("search_events");
        group.sampling_mode(SamplingMode::Flat);
        // The query cursor lives outside the routine, which criterion calls
        // anew for the warm-up and for every sample: each iteration runs the
        // next query of the cycle.
        let mut next = 0usize;
        group.bench_function("strataflow", |b| {
            b.iter(|| {
                next = (next + 1) % ours.len();
                ours.get(next).map(|q| index.search(q))
            });
        });
        let mut next = 0usize;
        group.bench_function("tantivy", |b| {
            b.iter(|| {
                next = (next + 1) % texts.len();
                texts.get(next).map(|t| tantivy.search(&searcher, t))
            });
        });
        group.finish();
    }
    c.final_summary();

    println!("summary ({n} events, per-query latency, strataflow / tantivy):");
    println!("{table}");
}
