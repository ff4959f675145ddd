//! Event search (spec §11.4, `searchEvents`): BM25 over weighted event
//! fields fused by RRF with structured (participant, type, time) rankings.
//!
//! [`EventIndex`] keeps every inserted [`EventDoc`] and a [`Bm25Index`] over
//! the weighted tokens ([`event_tokens`]) of the non-forgotten ones. A
//! forgotten event is removed from the BM25 index (and re-added if its
//! status changes back), so with no thread filter the candidates are
//! exactly the indexed docs and [`Bm25Index::search_all`] applies; with a
//! thread filter, statistics are recomputed over that thread's candidates
//! ([`Bm25Index::search`]).
//!
//! [`EventIndex::search`] follows §11.4 steps 1–7:
//!
//! 1. **Candidates**: status `Active` or `Superseded` (never `Forgotten` or
//!    `Removed`),
//!    and the event's thread equals [`EventQuery::thread`] when given.
//! 2. **Structured sets** over the candidates:
//!    - participants (given when some requested participant is non-empty
//!      after [`normalize`]): *every* requested participant
//!      [`fuzzy_match`]es some `temporal.participants` entry;
//!    - event type (given when non-empty after normalization):
//!      `fuzzy(event_type, q)` (snake_case name, e.g. `task_completed`) or
//!      `fuzzy(title + " " + summary + " " + tags.join(" "), q)`;
//!    - time (given when `from` or `to` is): `start = happened_start ??
//!      happened_end`, `end = happened_end ?? happened_start`, both known,
//!      `start ≤ to && end ≥ from` (a missing bound is open).
//! 3. **BM25** (k1 1.2, b 0.75) over the weighted fields of
//!    [`EVENT_FIELD_WEIGHTS`]; ties by id ascending.
//! 4. **Structured order**: intent `First` → chronology ascending, `Latest`
//!    → descending (chronology = `happened_start ?? happened_end ??
//!    mentioned_at`, compared as UTC milliseconds; ties by id ascending);
//!    no intent → memory weight ([`EventDoc::weight`]) descending, then id
//!    ascending (the reference's `updatedAt` tie-break has no counterpart
//!    here).
//! 5. **Rankings**: if some structured filter is given, the intersection
//!    of the given sets (`exact`) is the only candidates: `[bm25 ∩ exact,
//!    structured(exact)]`, and `[]` when `exact` is empty. Filters are
//!    hard: unlike the reference, which falls back to `[bm25]` plus each
//!    non-empty set when `exact` is empty, an event that fails a given
//!    filter is never returned ("happened no earlier than", "all must
//!    match" mean what they say). With no filter: `[bm25]`.
//! 6. **Zero lexical match**: a query with tokens, no BM25 hit and no
//!    structured filter → `[]`. If every ranking is empty: a query with
//!    tokens → `[]`; an empty query → `[structured(all candidates)]` (only
//!    without filters: given filters that match nothing give `[]`).
//! 7. RRF with `k = 60` (ties by best rank, then id), first `limit` results
//!    (`limit` clamped to `1..=20`; [`DEFAULT_EVENT_LIMIT`] is 6).
//!
//! Step 8 of the reference (persisting `lastRetrievedAt`) is not done here:
//! search is read-only.

use std::collections::{BTreeMap, BTreeSet};

use strataflow_record::envelope::{decode, encode_event};
use strataflow_record::record::Event;
use strataflow_record::{EncodeError, Record, RecordId, Timestamp};

use super::bm25::{Bm25Index, NO_DOC};
use super::rrf::{RRF_K, rrf};
use super::tokenizer::{fuzzy_match, normalize, tokens, weighted_tokens};
use crate::event_status::EventStatus;
use crate::snapshot::{Decoder, Encoder, SnapshotError, SnapshotProblem};

/// Default number of results.
pub const DEFAULT_EVENT_LIMIT: usize = 6;
/// Largest number of results.
pub const MAX_EVENT_LIMIT: usize = 20;

/// BM25 field weights of events (spec §11.4 step 3), in field order.
pub const EVENT_FIELD_WEIGHTS: [(&str, u32); 9] = [
    ("title", 4),
    ("summary", 3),
    ("tags", 2),
    ("quotes", 2),
    ("narrative", 1),
    ("participants", 5),
    ("eventType", 5),
    ("originalText", 4),
    ("happenedStart happenedEnd", 4),
];

/// The texts of the searchable fields of an event, in the order and with
/// the weights of [`EVENT_FIELD_WEIGHTS`]: title, summary, tags (joined by
/// spaces), quotes (joined), narrative, participants (joined), event type
/// name, original time text (`""` when missing), and the RFC 3339 strings
/// of `happened_start` and `happened_end` joined by a space (a missing one
/// omitted).
pub fn event_fields(e: &Event) -> Vec<(String, u32)> {
    let t = &e.temporal;
    let happened: Vec<String> = [t.happened_start, t.happened_end]
        .into_iter()
        .flatten()
        .map(Timestamp::to_rfc3339)
        .collect();
    let texts = [
        e.title.clone(),
        e.summary.clone(),
        e.tags.join(" "),
        e.quotes.join(" "),
        e.narrative.clone(),
        t.participants.join(" "),
        t.event_type.name().to_owned(),
        // default: no original text, nothing of it to index.
        t.original_text.clone().unwrap_or_default(),
        happened.join(" "),
    ];
    texts
        .into_iter()
        .zip(EVENT_FIELD_WEIGHTS)
        .map(|(text, (_, w))| (text, w))
        .collect()
}

/// The weighted BM25 tokens of an event ([`weighted_tokens`] of
/// [`event_fields`]).
pub fn event_tokens(e: &Event) -> Vec<String> {
    let fields = event_fields(e);
    let refs: Vec<(&str, u32)> = fields.iter().map(|(t, w)| (t.as_str(), *w)).collect();
    weighted_tokens(&refs)
}

/// An event as the index sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct EventDoc {
    /// Record id of the event.
    pub id: RecordId,
    /// The event.
    pub event: Event,
    /// Its status (forgotten events are never returned).
    pub status: EventStatus,
    /// The thread of the event's source block.
    pub thread: String,
    /// Memory weight, for the structured order without temporal intent
    /// (supplied by the caller).
    pub weight: f64,
}

/// Temporal intent of a query: order structured matches by chronology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// Earliest first.
    First,
    /// Latest first.
    Latest,
}

/// An event search request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventQuery {
    /// Free text (may be empty).
    pub text: String,
    /// Number of results, clamped to `1..=20` (default 6).
    pub limit: usize,
    /// Every one of these must fuzzy-match a participant.
    pub participants: Vec<String>,
    /// Fuzzy event type (or title/summary/tags) filter.
    pub event_type: Option<String>,
    /// Occurrence interval must end at or after this instant.
    pub from: Option<Timestamp>,
    /// Occurrence interval must start at or before this instant.
    pub to: Option<Timestamp>,
    /// Chronological order for structured rankings.
    pub intent: Option<Intent>,
    /// Only events of this thread (statistics over them).
    pub thread: Option<String>,
}

impl Default for EventQuery {
    fn default() -> Self {
        Self {
            text: String::new(),
            limit: DEFAULT_EVENT_LIMIT,
            participants: Vec::new(),
            event_type: None,
            from: None,
            to: None,
            intent: None,
            thread: None,
        }
    }
}

impl EventQuery {
    /// Whether an event passes the structured filters (§11.4 step 2:
    /// participants, type, time; not the thread or the status): what every
    /// event a search with filters returns passes. True without filters.
    pub fn matches(&self, e: &Event) -> bool {
        let participants_ok = self
            .participants
            .iter()
            .filter(|p| !normalize(p).is_empty())
            .all(|p| {
                e.temporal
                    .participants
                    .iter()
                    .any(|have| fuzzy_match(have, p))
            });
        let type_ok = self
            .event_type
            .as_deref()
            .filter(|t| !normalize(t).is_empty())
            .is_none_or(|want| {
                fuzzy_match(e.temporal.event_type.name(), want)
                    || fuzzy_match(
                        &format!("{} {} {}", e.title, e.summary, e.tags.join(" ")),
                        want,
                    )
            });
        let time_ok = (self.from.is_none() && self.to.is_none())
            || happened_interval(e).is_some_and(|(start, end)| {
                self.to.is_none_or(|to| start <= to) && self.from.is_none_or(|from| end >= from)
            });
        participants_ok && type_ok && time_ok
    }

    /// A text query with default options.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

/// One indexed event.
#[derive(Clone, Debug)]
struct Entry {
    doc: EventDoc,
    /// Its BM25 doc number, while not forgotten.
    bm25: Option<u32>,
}

/// The event search index. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct EventIndex {
    entries: BTreeMap<RecordId, Entry>,
    bm25: Bm25Index,
    /// BM25 doc number → (event id, interned thread).
    by_doc: Vec<(RecordId, u32)>,
    /// Thread name → interned number.
    threads: BTreeMap<String, u32>,
}

/// The occurrence interval used by the time filter.
fn happened_interval(e: &Event) -> Option<(Timestamp, Timestamp)> {
    let t = &e.temporal;
    let start = t.happened_start.or(t.happened_end)?;
    let end = t.happened_end.or(t.happened_start)?;
    Some((start, end))
}

/// `happened_start ?? happened_end ?? mentioned_at`, in UTC milliseconds.
fn chronology(e: &Event) -> i64 {
    let t = &e.temporal;
    t.happened_start
        .or(t.happened_end)
        .map_or(t.mentioned_at.utc_ms, |ts| ts.0)
}

impl EventIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of events held, whatever their status.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no event is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The event with this id.
    pub fn get(&self, id: &RecordId) -> Option<&EventDoc> {
        self.entries.get(id).map(|e| &e.doc)
    }

    /// Adds an event, or replaces the one with the same id.
    pub fn insert(&mut self, doc: EventDoc) {
        if let Some(old) = self.entries.remove(&doc.id)
            && let Some(d) = old.bm25
        {
            self.bm25.remove(d);
        }
        let bm25 = self.index_doc(&doc);
        self.entries.insert(doc.id, Entry { doc, bm25 });
    }

    /// Changes an event's status; unknown ids are ignored. Forgetting
    /// removes it from BM25; un-forgetting re-indexes it.
    pub fn set_status(&mut self, id: &RecordId, status: EventStatus) {
        let Some(entry) = self.entries.get(id) else {
            return;
        };
        let old_bm25 = entry.bm25;
        let new_bm25 = match (status, old_bm25) {
            (s, Some(d)) if s.is_hidden() => {
                self.bm25.remove(d);
                None
            }
            (s, None) if s.is_hidden() => None,
            (_, Some(d)) => Some(d),
            (_, None) => {
                let mut doc = entry.doc.clone();
                doc.status = status;
                self.index_doc(&doc)
            }
        };
        if let Some(entry) = self.entries.get_mut(id) {
            entry.doc.status = status;
            entry.bm25 = new_bm25;
        }
    }

    /// Changes an event's memory weight; unknown ids are ignored.
    pub fn set_weight(&mut self, id: &RecordId, weight: f64) {
        if let Some(entry) = self.entries.get_mut(id) {
            entry.doc.weight = weight;
        }
    }

    /// Adds a non-forgotten doc to BM25, returning its doc number.
    fn index_doc(&mut self, doc: &EventDoc) -> Option<u32> {
        if doc.status.is_hidden() {
            return None;
        }
        let next = u32::try_from(self.threads.len()).unwrap_or(u32::MAX);
        let thread = *self.threads.entry(doc.thread.clone()).or_insert(next);
        let n = self.bm25.add(&event_tokens(&doc.event));
        if n == NO_DOC {
            return None;
        }
        self.by_doc.push((doc.id, thread));
        Some(n)
    }

    /// Searches events (spec §11.4); returns `(id, rrf score)`, best first.
    pub fn search(&self, q: &EventQuery) -> Vec<(RecordId, f64)> {
        let limit = q.limit.clamp(1, MAX_EVENT_LIMIT);
        let query_tokens = tokens(&q.text);

        // Step 1: candidates.
        let thread = match &q.thread {
            None => None,
            Some(t) => match self.threads.get(t) {
                Some(n) => Some(*n),
                // No event of that thread: no candidate.
                None => return Vec::new(),
            },
        };
        // Step 2: structured sets.
        let participants: Vec<&String> = q
            .participants
            .iter()
            .filter(|p| !normalize(p).is_empty())
            .collect();
        let event_type = q.event_type.as_deref().filter(|t| !normalize(t).is_empty());
        let time_given = q.from.is_some() || q.to.is_some();
        let any_filter = !participants.is_empty() || event_type.is_some() || time_given;

        // The candidate list is needed only by structured rankings and the
        // empty-query fallback; a plain text query reads the index alone.
        let candidates: Vec<&EventDoc> = if any_filter || query_tokens.is_empty() {
            self.entries
                .values()
                .map(|e| &e.doc)
                .filter(|d| !d.status.is_hidden())
                .filter(|d| q.thread.as_ref().is_none_or(|t| d.thread == *t))
                .collect()
        } else {
            Vec::new()
        };

        // Step 3: BM25 over the candidates, ties by id.
        let id_of = |doc: u32| self.by_doc.get(super::bm25::index(doc)).map(|(id, _)| *id);
        let only_bm25 = !any_filter && !query_tokens.is_empty();
        let hits = match thread {
            // A plain text query over every event: only the top `limit`
            // matter (see below), found without sorting every match.
            None if only_bm25 => self.bm25.search_top_by(&query_tokens, limit, &id_of),
            None => self.bm25.search_all(&query_tokens),
            Some(t) => self.bm25.search(&query_tokens, &|doc| {
                self.by_doc
                    .get(super::bm25::index(doc))
                    .is_some_and(|(_, th)| *th == t)
            }),
        };
        let mut scored: Vec<(RecordId, f64)> = hits
            .into_iter()
            .filter_map(|(doc, s)| {
                let i = super::bm25::index(doc);
                self.by_doc.get(i).map(|(id, _)| (*id, s))
            })
            .collect();
        let order =
            |a: &(RecordId, f64), b: &(RecordId, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if only_bm25 {
            // BM25 is the only ranking: RRF over one ranking keeps its order
            // and scores rank r as 1 / (k + r + 1), so only the top `limit`
            // need sorting.
            if scored.len() > limit {
                scored.select_nth_unstable_by(limit - 1, order);
                scored.truncate(limit);
            }
            scored.sort_by(order);
            return scored
                .into_iter()
                .enumerate()
                .map(|(rank, (id, _))| (id, 1.0 / (RRF_K + rank as f64 + 1.0)))
                .collect();
        }
        scored.sort_by(order);
        let bm25: Vec<RecordId> = scored.into_iter().map(|(id, _)| id).collect();

        // Steps 5 and 6: rankings.
        let structured = |set: &[&EventDoc]| structured_order(set, q.intent);
        let exact: Vec<&EventDoc> = if any_filter {
            candidates
                .iter()
                .copied()
                .filter(|d| q.matches(&d.event))
                .collect()
        } else {
            Vec::new()
        };
        let mut rankings: Vec<Vec<RecordId>> = Vec::new();
        if any_filter && exact.is_empty() {
            // Filters are hard (see the module docs).
            return Vec::new();
        }
        if any_filter {
            let ids: BTreeSet<RecordId> = exact.iter().map(|d| d.id).collect();
            rankings.push(bm25.iter().filter(|id| ids.contains(id)).copied().collect());
            rankings.push(structured(&exact));
        } else {
            if !query_tokens.is_empty() && bm25.is_empty() && !any_filter {
                return Vec::new();
            }
            rankings.push(bm25);
        }
        if rankings.iter().all(Vec::is_empty) {
            if !query_tokens.is_empty() {
                return Vec::new();
            }
            rankings = vec![structured(&candidates)];
        }

        // Step 7.
        let mut fused = rrf(&rankings, RRF_K);
        fused.truncate(limit);
        fused
    }
}

/// Snapshot encoding ([`crate::snapshot`]).
impl EventIndex {
    /// Every event held, by id.
    pub fn docs(&self) -> impl Iterator<Item = &EventDoc> {
        self.entries.values().map(|e| &e.doc)
    }

    /// Writes the index: the interned threads in number order, the events
    /// by id (id, record envelope, status, thread, weight bits, BM25 doc
    /// number + 1 or 0), then the BM25 index. The doc → event table is not
    /// written: it follows from the events' doc numbers.
    pub fn encode(&self, e: &mut Encoder) -> Result<(), EncodeError> {
        let mut threads: Vec<&str> = vec![""; self.threads.len()];
        for (name, n) in &self.threads {
            if let Some(slot) = threads.get_mut(super::bm25::index(*n)) {
                *slot = name.as_str();
            }
        }
        e.len(threads.len());
        for t in threads {
            e.str(t);
        }
        e.len(self.entries.len());
        for entry in self.entries.values() {
            let doc = &entry.doc;
            e.id(&doc.id);
            e.bytes(&encode_event(&doc.event)?);
            e.u8(status_code(doc.status));
            e.str(&doc.thread);
            e.f64(doc.weight);
            e.u64(entry.bm25.map_or(0, |n| u64::from(n) + 1));
        }
        self.bm25.encode(e);
        Ok(())
    }

    /// Reads an index written by [`EventIndex::encode`], checking that the
    /// events and the BM25 docs correspond one to one (every live doc is
    /// exactly one non-forgotten event's).
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self, SnapshotError> {
        let thread_count = d.count(1)?;
        let mut threads = BTreeMap::new();
        for n in 0..thread_count {
            let row = n;
            let n = u32::try_from(n).map_err(|_| {
                d.invalid(SnapshotProblem::TooManyRows {
                    table: "threads",
                    row,
                })
            })?;
            let name = d.string()?;
            if threads.contains_key(&name) {
                return Err(d.invalid(SnapshotProblem::Repeated {
                    table: "thread",
                    name,
                }));
            }
            threads.insert(name, n);
        }
        let count = d.count(32)?;
        let mut entries = BTreeMap::new();
        for _ in 0..count {
            let id = d.id()?;
            let event = match decode(d.bytes()?) {
                Ok(Record::Event(event)) => event,
                Ok(other) => {
                    return Err(d.invalid(SnapshotProblem::NotAnEvent {
                        kind: other.kind().name(),
                    }));
                }
                Err(error) => return Err(d.invalid(SnapshotProblem::Event { id, error })),
            };
            let code = d.u8()?;
            let status = status_from_code(code)
                .ok_or_else(|| d.invalid(SnapshotProblem::EventStatus { code }))?;
            let thread = d.string()?;
            let weight = d.f64()?;
            let bm25 = match d.u64()? {
                0 => None,
                n => Some(
                    u32::try_from(n - 1)
                        .map_err(|_| d.invalid(SnapshotProblem::DocNumber { value: n }))?,
                ),
            };
            if status.is_hidden() && bm25.is_some() {
                return Err(d.invalid(SnapshotProblem::HiddenEventIndexed { id }));
            }
            let doc = EventDoc {
                id,
                event,
                status,
                thread,
                weight,
            };
            if entries.insert(id, Entry { doc, bm25 }).is_some() {
                return Err(d.invalid(SnapshotProblem::EventRepeated { id }));
            }
        }
        let bm25 = Bm25Index::decode(d)?;
        let mut by_doc: Vec<(RecordId, u32)> =
            vec![(RecordId::default(), u32::MAX); bm25.doc_count()];
        let mut indexed = 0usize;
        for entry in entries.values() {
            let Some(n) = entry.bm25 else { continue };
            let thread = threads.get(&entry.doc.thread).copied().ok_or_else(|| {
                d.invalid(SnapshotProblem::UnknownThread {
                    thread: entry.doc.thread.clone(),
                })
            })?;
            let slot = by_doc.get_mut(super::bm25::index(n));
            match slot {
                Some(slot) if bm25.contains(n) && slot.1 == u32::MAX => {
                    *slot = (entry.doc.id, thread);
                    indexed += 1;
                }
                _ => return Err(d.invalid(SnapshotProblem::NotOneLiveDoc { doc: n })),
            }
        }
        if indexed != bm25.len() {
            return Err(d.invalid(SnapshotProblem::UnclaimedDocs {
                live: bm25.len(),
                claimed: indexed,
            }));
        }
        Ok(Self {
            entries,
            bm25,
            by_doc,
            threads,
        })
    }
}

fn status_code(status: EventStatus) -> u8 {
    match status {
        EventStatus::Active => 0,
        EventStatus::Superseded => 1,
        EventStatus::Forgotten => 2,
        EventStatus::Removed => 3,
    }
}

fn status_from_code(code: u8) -> Option<EventStatus> {
    match code {
        0 => Some(EventStatus::Active),
        1 => Some(EventStatus::Superseded),
        2 => Some(EventStatus::Forgotten),
        3 => Some(EventStatus::Removed),
        _ => None,
    }
}

/// The structured order of a set of events (§11.4 step 4).
fn structured_order(set: &[&EventDoc], intent: Option<Intent>) -> Vec<RecordId> {
    let mut items: Vec<&EventDoc> = set.to_vec();
    match intent {
        Some(Intent::First) => {
            items.sort_by(|a, b| {
                chronology(&a.event)
                    .cmp(&chronology(&b.event))
                    .then(a.id.cmp(&b.id))
            });
        }
        Some(Intent::Latest) => {
            items.sort_by(|a, b| {
                chronology(&b.event)
                    .cmp(&chronology(&a.event))
                    .then(a.id.cmp(&b.id))
            });
        }
        None => items.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.id.cmp(&b.id))),
    }
    items.into_iter().map(|d| d.id).collect()
}

#[cfg(test)]
mod tests {
    use strataflow_record::SourceTime;
    use strataflow_record::record::{Criticality, Occurrence, Precision, Scope, TimeBasis};
    use strataflow_record::record::{EventTemporal, EventType};

    use super::*;

    fn rid(n: u8) -> RecordId {
        RecordId([n; 32])
    }

    fn ts(day: i64) -> Timestamp {
        // 2025-01-01T00:00:00Z plus `day` days.
        Timestamp(1_735_689_600_000 + day * 86_400_000)
    }

    fn event(title: &str) -> Event {
        Event {
            tenant: "t".to_owned(),
            block: rid(200),
            source_messages: vec![rid(201)],
            title: title.to_owned(),
            summary: String::new(),
            narrative: String::new(),
            tags: Vec::new(),
            quotes: Vec::new(),
            temporal: EventTemporal {
                mentioned_at: SourceTime::utc_without_offset(ts(100).0),
                happened_start: None,
                happened_end: None,
                original_text: None,
                precision: Precision::Unknown,
                basis: TimeBasis::Unknown,
                status: Occurrence::Occurred,
                participants: Vec::new(),
                event_type: EventType::Other,
                supersedes: Vec::new(),
                conflicts_with: Vec::new(),
            },
            scope: Scope::Project,
            criticality: Criticality::Routine,
            confidence_milli: 900,
        }
    }

    fn doc(n: u8, event: Event) -> EventDoc {
        EventDoc {
            id: rid(n),
            event,
            status: EventStatus::Active,
            thread: "main".to_owned(),
            weight: 1.0,
        }
    }

    fn ids(r: &[(RecordId, f64)]) -> Vec<RecordId> {
        r.iter().map(|x| x.0).collect()
    }

    fn index(docs: Vec<EventDoc>) -> EventIndex {
        let mut idx = EventIndex::new();
        for d in docs {
            idx.insert(d);
        }
        idx
    }

    /// Filler events so that idf values are comfortably positive.
    fn filler(idx: &mut EventIndex, from: u8, count: u8) {
        for n in from..from + count {
            let mut e = event(&format!("routine note {n}"));
            e.summary = "unrelated maintenance".to_owned();
            idx.insert(doc(n, e));
        }
    }

    /// The fast path of a plain text query (one ranking, top-k selection)
    /// gives exactly what RRF over the full BM25 ranking gives.
    #[test]
    fn plain_text_fast_path_equals_rrf_over_full_bm25() {
        let words = [
            "gateway", "deploy", "pottery", "paris", "sync", "notes", "blue", "river",
        ];
        let mut idx = EventIndex::new();
        for n in 0..120u8 {
            let pick = |k: usize| words[(usize::from(n) * 7 + k * 3) % words.len()];
            let mut e = event(&format!("{} {} {}", pick(0), pick(1), pick(2)));
            e.summary = format!("{} {}", pick(3), pick(n as usize % 5));
            idx.insert(doc(n, e));
        }
        for q in [
            "gateway",
            "paris blue",
            "deploy sync river notes",
            "pottery pottery",
        ] {
            for limit in [1, 3, 6, 20] {
                let got = idx.search(&EventQuery {
                    limit,
                    ..EventQuery::text(q)
                });
                let mut full: Vec<(RecordId, f64)> = idx
                    .bm25
                    .search_all(&tokens(q))
                    .into_iter()
                    .filter_map(|(d, s)| idx.by_doc.get(d as usize).map(|(id, _)| (*id, s)))
                    .collect();
                full.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                let ranking: Vec<RecordId> = full.into_iter().map(|(id, _)| id).collect();
                let mut want = rrf(&[ranking], RRF_K);
                want.truncate(limit);
                assert_eq!(got, want, "query {q}, limit {limit}");
            }
        }
    }

    #[test]
    fn field_weights_matter() {
        let mut title = event("Deploy the gateway");
        title.narrative = "Some words about nothing in particular".to_owned();
        let mut narrative = event("Weekly sync");
        narrative.narrative = "We talked about the gateway and nothing else".to_owned();
        let mut idx = index(vec![doc(1, narrative), doc(2, title)]);
        filler(&mut idx, 10, 5);
        let r = idx.search(&EventQuery::text("gateway"));
        assert_eq!(ids(&r), vec![rid(2), rid(1)]);
        // Participants weigh 5: beat a summary (3) hit.
        let mut p = event("Call");
        p.temporal.participants = vec!["Marta".to_owned()];
        let mut s = event("Call");
        s.summary = "marta".to_owned();
        let mut idx = index(vec![doc(3, s), doc(4, p)]);
        filler(&mut idx, 10, 5);
        let r = idx.search(&EventQuery::text("marta"));
        assert_eq!(ids(&r), vec![rid(4), rid(3)]);
    }

    #[test]
    fn field_tokens_exact() {
        let mut e = event("T");
        e.summary = "S".to_owned();
        e.tags = vec!["g1".to_owned(), "g2".to_owned()];
        e.quotes = vec!["q".to_owned()];
        e.narrative = "n".to_owned();
        e.temporal.participants = vec!["p".to_owned()];
        e.temporal.event_type = EventType::TaskCompleted;
        e.temporal.original_text = Some("o".to_owned());
        e.temporal.happened_start = Some(ts(0));
        let toks = event_tokens(&e);
        let count = |t: &str| toks.iter().filter(|x| *x == t).count();
        assert_eq!(count("word:t"), 4);
        assert_eq!(count("word:s"), 3);
        assert_eq!(count("word:g1"), 2);
        assert_eq!(count("word:q"), 2);
        assert_eq!(count("word:n"), 1);
        assert_eq!(count("word:p"), 5);
        assert_eq!(count("word:task_completed"), 5);
        assert_eq!(count("word:o"), 4);
        let fields = event_fields(&e);
        assert_eq!(fields[8].0, "2025-01-01T00:00:00.000Z");
        assert!(count("word:2025") == 4);
    }

    #[test]
    fn no_match_returns_empty() {
        let mut idx = index(vec![doc(1, event("StrataGate memory plugin"))]);
        filler(&mut idx, 10, 3);
        assert!(idx.search(&EventQuery::text("watermelon")).is_empty());
        assert!(!idx.search(&EventQuery::text("plugin")).is_empty());
    }

    #[test]
    fn empty_query_with_participants() {
        let mut a = event("Design review");
        a.temporal.participants = vec!["StrataGate".to_owned(), "Ana".to_owned()];
        let mut b = event("Lunch");
        b.temporal.participants = vec!["Bob".to_owned()];
        let idx = index(vec![doc(1, a), doc(2, b)]);
        let q = EventQuery {
            participants: vec!["StrataGate".to_owned()],
            ..EventQuery::default()
        };
        let r = idx.search(&q);
        assert_eq!(ids(&r), vec![rid(1)]);
        // Every requested participant must match.
        let q = EventQuery {
            participants: vec!["strata".to_owned(), "bob".to_owned()],
            text: "lunch".to_owned(),
            ..EventQuery::default()
        };
        // No event has both: nothing, though "lunch" matches event 2
        // (filters restrict, they do not re-rank).
        assert!(idx.search(&q).is_empty());
        // Empty query, no filter: everything, by weight then id.
        let mut idx = idx;
        idx.set_weight(&rid(2), 5.0);
        assert_eq!(
            ids(&idx.search(&EventQuery::default())),
            vec![rid(2), rid(1)]
        );
    }

    #[test]
    fn forgotten_never_returned() {
        let mut idx = index(vec![
            doc(1, event("gateway launch")),
            doc(2, event("gateway outage")),
        ]);
        idx.set_status(&rid(1), EventStatus::Forgotten);
        let r = idx.search(&EventQuery::text("gateway"));
        assert_eq!(ids(&r), vec![rid(2)]);
        assert!(idx.search(&EventQuery::text("launch")).is_empty());
        assert_eq!(ids(&idx.search(&EventQuery::default())), vec![rid(2)]);
        // Superseded stays searchable.
        idx.set_status(&rid(2), EventStatus::Superseded);
        assert_eq!(ids(&idx.search(&EventQuery::text("outage"))), vec![rid(2)]);
        // Restoring re-indexes.
        idx.set_status(&rid(1), EventStatus::Active);
        assert_eq!(ids(&idx.search(&EventQuery::text("launch"))), vec![rid(1)]);
        // Inserting a forgotten event.
        let mut d = doc(3, event("secret launch"));
        d.status = EventStatus::Forgotten;
        idx.insert(d);
        assert_eq!(ids(&idx.search(&EventQuery::text("secret"))), vec![]);
        assert_eq!(idx.len(), 3);
        assert_eq!(
            idx.get(&rid(3)).map(|d| d.status),
            Some(EventStatus::Forgotten)
        );
    }

    fn timeline() -> EventIndex {
        let mut a = event("release alpha");
        a.temporal.happened_start = Some(ts(10));
        let mut b = event("release beta");
        b.temporal.happened_end = Some(ts(20));
        let c = event("release gamma"); // mentioned at day 100
        let mut d = event("release delta");
        d.temporal.happened_start = Some(ts(5));
        d.temporal.happened_end = Some(ts(8));
        index(vec![doc(1, a), doc(2, b), doc(3, c), doc(4, d)])
    }

    #[test]
    fn intent_orders_chronologically() {
        let idx = timeline();
        let mut q = EventQuery {
            intent: Some(Intent::First),
            ..EventQuery::default()
        };
        assert_eq!(ids(&idx.search(&q)), vec![rid(4), rid(1), rid(2), rid(3)]);
        q.intent = Some(Intent::Latest);
        assert_eq!(ids(&idx.search(&q)), vec![rid(3), rid(2), rid(1), rid(4)]);
        // With a filter matching everything: exactly [bm25 ∩ exact,
        // structured(exact)] fused.
        let bm25 = ids(&idx.search(&EventQuery::text("release")));
        assert_eq!(bm25.len(), 4);
        q.text = "release".to_owned();
        q.event_type = Some("release".to_owned());
        let expected = rrf(&[bm25, vec![rid(3), rid(2), rid(1), rid(4)]], RRF_K);
        assert_eq!(idx.search(&q), expected);
    }

    #[test]
    fn time_filter() {
        let idx = timeline();
        let q = EventQuery {
            from: Some(ts(7)),
            to: Some(ts(12)),
            ..EventQuery::default()
        };
        // delta [5, 8] and alpha [10, 10] overlap; beta [20, 20] does not;
        // gamma has no occurrence time.
        let mut got = ids(&idx.search(&q));
        got.sort();
        assert_eq!(got, vec![rid(1), rid(4)]);
        let q = EventQuery {
            from: Some(ts(15)),
            ..EventQuery::default()
        };
        assert_eq!(ids(&idx.search(&q)), vec![rid(2)]);
        let q = EventQuery {
            to: Some(ts(9)),
            intent: Some(Intent::Latest),
            ..EventQuery::default()
        };
        assert_eq!(ids(&idx.search(&q)), vec![rid(4)]);
    }

    #[test]
    fn exact_intersection_rule() {
        let mut a = event("gateway deploy");
        a.temporal.participants = vec!["Ana".to_owned()];
        a.temporal.event_type = EventType::Release;
        let mut b = event("gateway deploy gateway");
        b.temporal.participants = vec!["Ana".to_owned()];
        b.temporal.event_type = EventType::Meeting;
        let mut c = event("gateway");
        c.temporal.participants = vec!["Bob".to_owned()];
        c.temporal.event_type = EventType::Release;
        let mut idx = index(vec![doc(1, a), doc(2, b), doc(3, c)]);
        filler(&mut idx, 10, 4);
        // exact = participants(Ana) ∩ type(release) = {1}: only it is returned.
        let q = EventQuery {
            text: "gateway".to_owned(),
            participants: vec!["ana".to_owned()],
            event_type: Some("release".to_owned()),
            ..EventQuery::default()
        };
        assert_eq!(ids(&idx.search(&q)), vec![rid(1)]);
        // Empty intersection: nothing (filters are hard), even for a query
        // every event matches lexically.
        let q = EventQuery {
            text: "gateway".to_owned(),
            participants: vec!["bob".to_owned()],
            event_type: Some("meeting".to_owned()),
            ..EventQuery::default()
        };
        assert!(idx.search(&q).is_empty());
        // The same with an empty query (the reference falls back to every
        // candidate).
        let q = EventQuery {
            participants: vec!["zed".to_owned()],
            ..EventQuery::default()
        };
        assert!(idx.search(&q).is_empty());
        // A non-lexical query with a filter still returns the exact set.
        let q = EventQuery {
            text: "watermelon".to_owned(),
            participants: vec!["bob".to_owned()],
            ..EventQuery::default()
        };
        assert_eq!(ids(&idx.search(&q)), vec![rid(3)]);
        // A filter matching nothing with a lexical miss: [].
        let q = EventQuery {
            text: "watermelon".to_owned(),
            participants: vec!["zed".to_owned()],
            ..EventQuery::default()
        };
        assert!(idx.search(&q).is_empty());
    }

    #[test]
    fn thread_filter_and_limit() {
        let mut idx = EventIndex::new();
        for n in 0..30u8 {
            let mut d = doc(n, event(&format!("gateway note {n}")));
            d.thread = if n % 2 == 0 { "a" } else { "b" }.to_owned();
            idx.insert(d);
        }
        let mut q = EventQuery::text("gateway");
        assert_eq!(idx.search(&q).len(), DEFAULT_EVENT_LIMIT);
        q.limit = 0;
        assert_eq!(idx.search(&q).len(), 1);
        q.limit = 100;
        assert_eq!(idx.search(&q).len(), MAX_EVENT_LIMIT);
        q.thread = Some("b".to_owned());
        let r = idx.search(&q);
        assert_eq!(r.len(), 15);
        assert!(r.iter().all(|(id, _)| id.0[0] % 2 == 1));
        q.thread = Some("nope".to_owned());
        assert!(idx.search(&q).is_empty());
    }

    #[test]
    fn replace_and_determinism() {
        let mut idx = timeline();
        idx.insert(doc(1, event("renamed completely")));
        assert!(!ids(&idx.search(&EventQuery::text("alpha"))).contains(&rid(1)));
        assert_eq!(ids(&idx.search(&EventQuery::text("renamed"))), vec![rid(1)]);
        assert_eq!(idx.len(), 4);
        // Same inputs in another insertion order give the same output.
        let docs: Vec<EventDoc> = (1..=4).filter_map(|n| idx.get(&rid(n)).cloned()).collect();
        let mut reversed = docs.clone();
        reversed.reverse();
        let (a, b) = (index(docs), index(reversed));
        for text in ["release", "", "renamed release delta"] {
            let q = EventQuery::text(text);
            assert_eq!(a.search(&q), b.search(&q));
        }
    }
}
