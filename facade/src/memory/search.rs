//! The query side of a [`Memory`]: search over events, graph nodes and raw
//! messages, fused by RRF, with a word budget; every search is recorded as a
//! retrieval batch.
//!
//! A [`Searcher`] holds the indexes of one tenant under one profile; build
//! it once to answer many queries (`search --queries`, `eval`).

use std::collections::BTreeMap;

use strataflow_log::record::{EvidenceRef, Precision, Record, RecordKind, RefKind, Retrieval};
use strataflow_log::{Durability, RecordId, StoredRecord, Timestamp};
use strataflow_materializers::event_status::{EventStatus, EventStatusView};
use strataflow_materializers::graph_state::GraphState;
use strataflow_materializers::search::bm25::Bm25Index;
use strataflow_materializers::search::events::{EventDoc, EventIndex, EventQuery, Intent};
use strataflow_materializers::search::graph::GraphIndex;
use strataflow_materializers::search::rrf::{RRF_K, rrf, rrf_weighted};
use strataflow_materializers::search::tokenizer::{
    fuzzy_match, normalize, tokens, weighted_tokens,
};

use strataflow_log::StoreError;
use strataflow_materializers::snapshot::{Decoder, Encoder, SnapshotError};

use super::{FilterProblem, Memory, MemoryError, QueryError};

/// blake3 (key-derivation mode) of a snapshot body.
fn snapshot_checksum(body: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key(SNAPSHOT_CONTEXT);
    h.update(body);
    *h.finalize().as_bytes()
}

/// Which index a search reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// Event cards (BM25 + structured rankings, RRF).
    Events,
    /// Graph nodes (BM25F).
    Graph,
    /// Raw messages (BM25).
    Raw,
    /// The three fused by RRF (the default).
    #[default]
    All,
}

impl Channel {
    /// The name used in the CLI and in retrieval records.
    pub fn name(self) -> &'static str {
        match self {
            Self::Events => "events",
            Self::Graph => "graph",
            Self::Raw => "raw",
            Self::All => "all",
        }
    }
}

/// A search.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SearchRequest {
    /// Query text.
    pub query: String,
    /// Only this thread.
    pub thread: Option<String>,
    /// Most hits (per channel for `all` with a budget); default 6 events,
    /// 8 graph nodes, 6 messages, 8 fused.
    pub limit: Option<usize>,
    /// Every one must be a participant.
    pub participants: Vec<String>,
    /// Event type (fuzzy).
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    /// Happened no earlier than (RFC 3339).
    pub from: Option<String>,
    /// Happened no later than (RFC 3339).
    pub to: Option<String>,
    /// `first` or `latest`.
    pub intent: Option<String>,
    /// Stop before the compact texts exceed this many words.
    pub budget: Option<usize>,
}

/// One hit.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SearchHit {
    /// `event:<id>`, `node:<id>`, `msg:<id>`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// event / node / message.
    pub kind: &'static str,
    /// Ranking score (BM25, or RRF for fused results): ranking only, not confidence.
    pub score: f64,
    /// Compact text.
    pub text: String,
    /// Words in the compact text.
    pub words: usize,
    /// External ids of the messages the text states.
    pub source_messages: Vec<String>,
    /// Thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Event title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Event happened start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub happened_start: Option<Timestamp>,
    /// Event happened end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub happened_end: Option<Timestamp>,
    /// Event time precision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
    /// Event participants.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub participants: Vec<String>,
    /// Block of the event or message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<RecordId>,
    #[serde(skip)]
    target: Option<EvidenceRef>,
}

impl SearchHit {
    /// The hit an expansion records for its target.
    pub(crate) fn expansion(target: EvidenceRef) -> Self {
        Self {
            reference: strataflow_operators::evidence_gate::format_ref(&target),
            kind: "expansion",
            score: 0.0,
            text: String::new(),
            words: 0,
            source_messages: Vec::new(),
            thread: None,
            title: None,
            happened_start: None,
            happened_end: None,
            precision: None,
            participants: Vec::new(),
            block: None,
            target: Some(target),
        }
    }
}

/// A search's answer.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SearchResponse {
    /// The retrieval batch recorded for it (none when not recorded).
    pub batch: Option<RecordId>,
    /// Hits in rank order.
    pub hits: Vec<SearchHit>,
    /// Words of all compact texts.
    pub words: usize,
}

/// A raw message in the raw index.
struct RawDoc {
    id: RecordId,
    external_id: String,
    thread: String,
    text: String,
    /// The message ends with a question.
    question: bool,
    /// Speaker (or role label when it has none), for participant filters.
    speaker: String,
    /// When it was said (UTC ms), for time filters.
    said: Timestamp,
}

/// The indexes of one tenant under one profile, kept up to date with the
/// log by [`Memory::refresh_searcher`]: building one is refreshing an empty
/// one from the first record, so an index refreshed along the way and one
/// built afresh hold the same content ([`Searcher::digest`]).
///
/// [`TenantMemory::searcher`](super::TenantMemory::searcher) persists it as
/// a view (under a `search/…` key, see `docs/format.md`): it resumes from
/// the saved snapshot and saves it back when the refresh applied something.
pub struct Searcher {
    tenant: String,
    profile: Option<String>,
    /// Last log sequence applied.
    last_seq: u64,
    /// The sequence this searcher resumed from: its snapshot's, or the
    /// later one the snapshot's "through" entry names (none when built from
    /// the first record).
    resumed_from: Option<u64>,
    /// The sequence its persisted snapshot was saved at (none: not saved).
    saved_at: Option<u64>,
    extractor: (String, strataflow_log::Digest),
    events: EventIndex,
    event_threads: BTreeMap<RecordId, String>,
    block_threads: BTreeMap<RecordId, String>,
    external: BTreeMap<RecordId, String>,
    graph: GraphState,
    /// Digest of the graph `graph_index` was built from.
    graph_digest: String,
    graph_index: GraphIndex,
    raw: Bm25Index,
    /// The same messages with stemmed tokens, for the fused search.
    raw_stemmed: Bm25Index,
    raw_docs: Vec<RawDoc>,
    /// Raw doc → the next message of its thread.
    next_in_thread: Vec<Option<usize>>,
    last_in_thread: BTreeMap<String, usize>,
}

/// A searcher being caught up with the log by a scan that may feed other
/// views too ([`Memory::search_pass`], [`Memory::finish_search_pass`]).
pub(crate) struct SearchPass {
    searcher: Searcher,
    /// The snapshot's identity and the sequence of the snapshot the
    /// searcher was resumed from, if any (`None`: never saved).
    identity: Option<(SearchIdentity, Option<u64>)>,
    /// A record of the tenant that can change the searcher or the views
    /// it reads was taken.
    applied: bool,
    new_events: Vec<RecordId>,
}

impl SearchPass {
    /// The first sequence the searcher needs.
    pub(crate) fn from(&self) -> u64 {
        self.searcher.last_seq + 1
    }

    /// Takes the next record of the log (see [`Searcher::take`]); a record
    /// the searcher already applied is ignored.
    pub(crate) fn take(&mut self, stored: StoredRecord) {
        if stored.seq >= self.from() {
            self.applied |= self.searcher.take(stored, &mut self.new_events);
        }
    }

    /// Marks every record up to `seq` as seen (another tenant's records
    /// the searcher was not given).
    pub(crate) fn skip_to(&mut self, seq: u64) {
        self.searcher.last_seq = self.searcher.last_seq.max(seq);
    }
}

/// Facts a node hit shows at most in a fused search (`search all`): those
/// sharing a word with the query, best first.
const FUSED_NODE_FACTS: usize = 3;

/// The RRF weight of the dense list in a fused search (the three lexical
/// lists weigh 1 each).
pub const DENSE_WEIGHT: f64 = 1.0;

/// Words of a budgeted fused search filled by the lexical lists alone
/// before the dense list is fused in: the default budget of a search (`diff
/// --queries`, `eval locomo`), so that what the query's words find first
/// stays first and the dense list adds below it (measured in
/// docs/guides/embeddings.md).
pub const LEXICAL_FIRST_WORDS: usize = crate::eval::query_diff::DEFAULT_QUERY_BUDGET;

/// Name of the persisted search view (the first part of its key).
pub const SEARCH_VIEW: &str = "search";

/// Format version of a search snapshot (its first byte). Bump it whenever
/// the layout of `docs/format.md` §search snapshot changes: a snapshot of
/// another version is rebuilt, never read.
pub const SEARCH_SNAPSHOT_VERSION: u8 = 2;

/// Suffix of the view name under which a search snapshot's "valid
/// through" entry is kept: the sequence the snapshot was saved at and the
/// later sequence up to which no record changed it
/// ([`Memory::finish_search_pass`]).
const THROUGH_SUFFIX: &str = "/through";

/// blake3 key-derivation context of a search snapshot's checksum.
const SNAPSHOT_CONTEXT: &str = "strataflow search snapshot v1";

/// The operators a searcher depends on: its view key and what a snapshot
/// must name to be read.
struct SearchIdentity {
    key: String,
    extractor: (String, strataflow_log::Digest),
    projector: (String, strataflow_log::Digest),
}

impl Memory {
    /// The search indexes of a tenant under a profile, up to the end of the
    /// log: resumed from the persisted snapshot when there is a valid one
    /// (an unreadable, damaged, older-format or foreign snapshot is rebuilt
    /// from the first record, never trusted), refreshed, and saved back when
    /// the refresh applied something.
    pub(crate) fn searcher(
        &self,
        profile: Option<&str>,
        tenant: &str,
    ) -> Result<Searcher, MemoryError> {
        let mut pass = self.search_pass(profile, tenant)?;
        for item in self.store.scan(pass.from()) {
            pass.take(item?);
        }
        self.finish_search_pass(pass)
    }

    /// A tenant's searcher resumed from its persisted snapshot (or empty),
    /// ready to be fed the records after its last sequence
    /// ([`SearchPass::take`]) and finished by
    /// [`Memory::finish_search_pass`], which saves it.
    pub(crate) fn search_pass(
        &self,
        profile: Option<&str>,
        tenant: &str,
    ) -> Result<SearchPass, MemoryError> {
        let identity = self.search_identity(profile)?;
        let loaded = match self.store.view_chunks(&identity.key, tenant) {
            Ok(None) => None,
            Ok(Some((seq, bytes))) => match Searcher::decode(&bytes, &identity, profile, tenant) {
                Ok(s) if s.last_seq == seq => Some(s),
                Ok(s) => {
                    tracing::warn!(
                        view = %identity.key,
                        tenant,
                        "search snapshot says sequence {} but is stored at {seq}; rebuilding",
                        s.last_seq
                    );
                    None
                }
                Err(e) => {
                    tracing::warn!(view = %identity.key, tenant, "search snapshot unreadable ({e}); rebuilding");
                    None
                }
            },
            Err(StoreError::Corrupt { detail, .. }) => {
                tracing::warn!(view = %identity.key, tenant, "search snapshot damaged ({detail}); rebuilding");
                None
            }
            Err(e) => return Err(e.into()),
        };
        let searcher = match loaded {
            Some(mut s) => {
                if let Some(through) = self.snapshot_through(&identity, tenant, s.last_seq) {
                    s.last_seq = through;
                    s.resumed_from = Some(through);
                }
                s
            }
            None => Searcher::empty(profile, tenant, &identity),
        };
        let resumed = searcher.resumed_from;
        Ok(SearchPass {
            searcher,
            identity: Some((identity, resumed)),
            applied: false,
            new_events: Vec::new(),
        })
    }

    /// A tenant's searcher from the first record, never saved: what
    /// [`Memory::searcher_rebuilt`] builds, to be fed by a scan.
    pub(crate) fn rebuild_search_pass(
        &self,
        profile: Option<&str>,
        tenant: &str,
    ) -> Result<SearchPass, MemoryError> {
        let identity = self.search_identity(profile)?;
        Ok(SearchPass {
            searcher: Searcher::empty(profile, tenant, &identity),
            identity: None,
            applied: false,
            new_events: Vec::new(),
        })
    }

    /// Ends a [`SearchPass`]: brings statuses, weights and the graph up to
    /// date and saves the snapshot when something was applied or it was not
    /// resumed from one. When it only
    /// went past records that change nothing in it (this tenant's retrieval
    /// batches, other tenants' records), the snapshot is not rewritten: a
    /// small "through" entry records that the snapshot saved at its
    /// sequence holds up to the searcher's (so the next catch-up starts
    /// there). A search records a retrieval batch, so rewriting every
    /// document after each search is what this avoids.
    pub(crate) fn finish_search_pass(&self, pass: SearchPass) -> Result<Searcher, MemoryError> {
        let SearchPass {
            mut searcher,
            identity,
            applied,
            new_events,
        } = pass;
        let applied = self.finish_applied(&mut searcher, new_events)? || applied;
        let Some((identity, resumed)) = identity else {
            return Ok(searcher);
        };
        match resumed {
            Some(resumed) if !applied => {
                if let Some(saved_at) = searcher.saved_at
                    && searcher.last_seq > resumed
                {
                    self.store.save_view_chunks(
                        &through_key(&identity),
                        &searcher.tenant,
                        searcher.last_seq,
                        &saved_at.to_be_bytes(),
                    )?;
                }
            }
            _ => {
                let bytes = searcher.encode(&identity)?;
                self.store.save_view_chunks(
                    &identity.key,
                    &searcher.tenant,
                    searcher.last_seq,
                    &bytes,
                )?;
                searcher.saved_at = Some(searcher.last_seq);
            }
        }
        Ok(searcher)
    }

    /// The sequence up to which the snapshot of `identity` saved at
    /// `saved_at` holds, when a "through" entry of that snapshot says so
    /// (one of an older snapshot, past the end of the log, unreadable or
    /// malformed, is ignored: the catch-up then starts at the snapshot's
    /// own sequence).
    fn snapshot_through(
        &self,
        identity: &SearchIdentity,
        tenant: &str,
        saved_at: u64,
    ) -> Option<u64> {
        match self.store.view_chunks(&through_key(identity), tenant) {
            Ok(Some((through, bytes))) => {
                let of = <[u8; 8]>::try_from(bytes.as_slice())
                    .ok()
                    .map(u64::from_be_bytes);
                // Past the end of the log it cannot be (a store copied back
                // from a backup without its newest records).
                let end = self.store.last_seq().ok().flatten().unwrap_or(0);
                (of == Some(saved_at) && through > saved_at && through <= end).then_some(through)
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(view = %identity.key, tenant, "search snapshot's through entry unreadable ({e}); catching up from the snapshot");
                None
            }
        }
    }

    /// The search indexes of a tenant built from the first record, without
    /// reading or saving the snapshot (what `views --verify` compares with).
    // reason: the snapshot tests and the `search_snapshot_timing` example
    // compare a resumed searcher with a rebuilt one; `views --verify` is
    // the public form of that check.
    #[doc(hidden)]
    pub fn searcher_rebuilt(
        &self,
        profile: Option<&str>,
        tenant: &str,
    ) -> Result<Searcher, MemoryError> {
        let identity = self.search_identity(profile)?;
        let mut s = Searcher::empty(profile, tenant, &identity);
        self.refresh_applied(&mut s)?;
        Ok(s)
    }

    /// The `views` key of a profile's search snapshot:
    /// `search/<extractor>/<config short>/<projector>/<config short>`.
    // reason: the snapshot tests and the timing example damage or time the
    // stored snapshot under this key; not an API.
    #[doc(hidden)]
    pub fn search_view_key(&self, profile: Option<&str>) -> Result<String, MemoryError> {
        Ok(self.search_identity(profile)?.key)
    }

    fn search_identity(&self, profile: Option<&str>) -> Result<SearchIdentity, MemoryError> {
        let (_, ops) = self.operators(profile)?;
        let extractor = (ops.extractor.id().to_string(), ops.extractor.config_hash());
        let projector = (ops.projector.id().to_string(), ops.projector.config_hash());
        let key = format!(
            "{SEARCH_VIEW}/{}/{}/{}/{}",
            extractor.0,
            extractor.1.short(),
            projector.0,
            projector.1.short()
        );
        Ok(SearchIdentity {
            key,
            extractor,
            projector,
        })
    }

    /// Applies the records appended since the searcher's last sequence:
    /// new messages and events enter the indexes; statuses, weights and
    /// the graph are brought up to date. (Only [`TenantMemory::searcher`](super::TenantMemory::searcher) saves
    /// the snapshot.)
    pub fn refresh_searcher(&self, s: &mut Searcher) -> Result<(), MemoryError> {
        self.refresh_applied(s).map(|_| ())
    }

    /// [`Memory::refresh_searcher`]; true when some record of the tenant
    /// was applied or the graph changed.
    fn refresh_applied(&self, s: &mut Searcher) -> Result<bool, MemoryError> {
        let mut applied = false;
        let mut new_events: Vec<RecordId> = Vec::new();
        for item in self.store.scan(s.last_seq + 1) {
            applied |= s.take(item?, &mut new_events);
        }
        if !applied {
            // Only other tenants' records, or this tenant's batches and
            // assessments: statuses, weights and the graph are as they
            // were, so the (costly) catch-up of those views is skipped.
            return Ok(applied);
        }
        Ok(self.finish_applied(s, new_events)? || applied)
    }

    /// The end of a catch-up: the new events enter the index; statuses,
    /// weights and the graph are brought up to date. True when the graph
    /// changed.
    fn finish_applied(
        &self,
        s: &mut Searcher,
        new_events: Vec<RecordId>,
    ) -> Result<bool, MemoryError> {
        let mut applied = false;
        let status: EventStatusView = self.event_status(&s.tenant)?;
        let weights = self.weights_with(&s.tenant, &status)?;
        // The first mention of each event not indexed yet, in order.
        let mut seen = std::collections::HashSet::new();
        let new_events: Vec<RecordId> = new_events
            .into_iter()
            .filter(|id| s.events.get(id).is_none() && seen.insert(*id))
            .collect();
        for stored in self.store.get_many(&new_events)?.into_iter().flatten() {
            let (id, Record::Event(event)) = (stored.id, stored.record) else {
                continue;
            };
            // default: An event's block precedes it in the log, so its thread is known; "" is only the documented value of a thread-less hit.
            let thread = s
                .block_threads
                .get(&event.block)
                .cloned()
                .unwrap_or_default();
            s.event_threads.insert(id, thread.clone());
            s.events.insert(EventDoc {
                id,
                event,
                status: EventStatus::Active,
                thread,
                weight: 1.0,
            });
        }
        let ids: Vec<RecordId> = s.event_threads.keys().copied().collect();
        for id in ids {
            s.events.set_status(
                &id,
                status.get(&id).map_or(EventStatus::Active, |x| x.status),
            );
            s.events
                .set_weight(&id, weights.get(&id).map_or(1.0, |w| w.weight));
        }
        let graph = self.graph_with(s.profile.as_deref(), &s.tenant, &status)?;
        let digest = graph.digest();
        if digest != s.graph_digest {
            s.graph_index = GraphIndex::build(&graph);
            s.graph_digest = digest;
            applied = true;
        }
        s.graph = graph;
        Ok(applied)
    }

    /// Runs a search and records it as a retrieval batch.
    pub(crate) fn search(
        &self,
        profile: Option<&str>,
        tenant: &str,
        channel: Channel,
        request: &SearchRequest,
    ) -> Result<SearchResponse, MemoryError> {
        let searcher = self.searcher(profile, tenant)?;
        let dense = match channel {
            Channel::All => self.dense_ranking(profile, tenant, &request.query)?,
            _ => Vec::new(),
        };
        let hits = searcher.search_with_dense(channel, request, &dense)?;
        self.record_batch(tenant, &format!("search {}", channel.name()), request, hits)
    }

    /// The dense list of a fused search of `query`: the 20 records of
    /// `tenant` most like it by the profile's embedder, none when the
    /// profile names none.
    pub fn dense_ranking(
        &self,
        profile: Option<&str>,
        tenant: &str,
        query: &str,
    ) -> Result<Vec<RecordId>, MemoryError> {
        let resolved = self.profile_or_default(profile)?;
        let focused = focus(query);
        if resolved.embedder.is_none() || focused.trim().is_empty() {
            return Ok(Vec::new());
        }
        let response = self.dense_search(Some(&resolved.name), tenant, &focused, Some(20))?;
        Ok(response.hits.into_iter().map(|h| h.id).collect())
    }

    /// Records hits as a retrieval batch (not on a replica: [`Memory::set_replica`]).
    pub(crate) fn record_batch(
        &self,
        tenant: &str,
        call: &str,
        request: &SearchRequest,
        hits: Vec<SearchHit>,
    ) -> Result<SearchResponse, MemoryError> {
        if self.replica {
            let words = hits.iter().map(|h| h.words).sum();
            return Ok(SearchResponse {
                batch: None,
                hits,
                words,
            });
        }
        #[expect(
            clippy::expect_used,
            reason = "a SearchRequest (strings, numbers, lists) always serializes to JSON"
        )]
        let filters = strataflow_pipeline::source::canonical_json(
            &serde_json::to_value(request).expect("a search request is JSON"),
        );
        // The ordinal is the count of batches plus one: two threads sharing
        // this memory must not read the same count (two searches alike
        // would then be one record, one batch for both).
        let _recording = self
            .batch_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let record = Record::Retrieval(Retrieval {
            tenant: tenant.to_owned(),
            ordinal: self.store.count(RecordKind::Retrieval)? + 1,
            call: call.to_owned(),
            query: request.query.clone(),
            filters,
            refs: hits.iter().filter_map(|h| h.target.clone()).collect(),
        });
        let receipt = self.store.append(&[record], Durability::Sync)?;
        let words = hits.iter().map(|h| h.words).sum();
        Ok(SearchResponse {
            batch: receipt.records.first().map(|a| a.id),
            hits,
            words,
        })
    }
}

/// The view name of a search snapshot's "through" entry.
fn through_key(identity: &SearchIdentity) -> String {
    format!("{}{THROUGH_SUFFIX}", identity.key)
}

/// Whether a record of this kind can change what a searcher reads from the
/// event status, weights and graph views (or its indexes). Retrieval
/// batches, assessments and model calls cannot.
fn changes_search_views(kind: RecordKind) -> bool {
    match kind {
        RecordKind::Message
        | RecordKind::Block
        | RecordKind::BlockSummary
        | RecordKind::Event
        | RecordKind::GraphAssertion
        | RecordKind::Derivation
        | RecordKind::Governance
        | RecordKind::UseReceipt
        | RecordKind::ImportSource => true,
        RecordKind::ModelCall
        | RecordKind::Retrieval
        | RecordKind::Assessment
        | RecordKind::Embedding
        | RecordKind::KeyedMemory
        | RecordKind::MemoryPurge => false,
    }
}

/// Moves the hits of `ranks` (fused RRF scores, best first) from `by_ref`
/// to the end of `fused`, skipping those whose messages `covered` already
/// holds; with `words`, stops before the first hit that would take the
/// fused hits past that many words (what is left stays in `by_ref`).
fn take_fused(
    ranks: Vec<(String, f64)>,
    by_ref: &mut BTreeMap<String, SearchHit>,
    covered: &mut Vec<String>,
    fused: &mut Vec<SearchHit>,
    words: Option<usize>,
) {
    let mut used: usize = fused.iter().map(|h| h.words).sum();
    for (reference, score) in ranks {
        let Some(h) = by_ref.get(&reference) else {
            continue;
        };
        if !h.source_messages.is_empty() && h.source_messages.iter().all(|m| covered.contains(m)) {
            by_ref.remove(&reference);
            continue;
        }
        if words.is_some_and(|limit| used + h.words > limit) {
            break;
        }
        let Some(mut h) = by_ref.remove(&reference) else {
            continue;
        };
        if h.kind != "node" {
            covered.extend(h.source_messages.iter().cloned());
        }
        used += h.words;
        h.score = score;
        fused.push(h);
    }
}

/// The query without English stop words ("when did Caroline go to the
/// support group" → "Caroline support group"), unless nothing would remain.
/// Used by `all`, whose channels otherwise rank on "did", "the", "to"…
/// Cut where the indexes cut words (their UAX #29 segments): a stop word's
/// segment becomes a space and everything else stays as written, so the
/// focused query tokenizes like the query minus its stop words ("3.5",
/// "Caroline’s", "記憶" keep their index tokens).
fn focus(query: &str) -> String {
    let mut kept = String::with_capacity(query.len());
    let mut cut = false;
    let mut from = 0;
    // Segment spans are char boundaries of `query`, in order: every `get`
    // below succeeds, the defaults are never taken.
    for w in strataflow_text::tokens::segments(query) {
        if strataflow_operators::text::is_stop_word(&normalize(w.text).replace('’', "'")) {
            kept.push_str(query.get(from..w.start).unwrap_or_default());
            kept.push(' ');
            from = w.end;
            cut = true;
        }
    }
    kept.push_str(query.get(from..).unwrap_or_default());
    let kept = kept.split_whitespace().collect::<Vec<_>>().join(" ");
    if !cut || tokens(&kept).is_empty() {
        query.to_owned()
    } else {
        kept
    }
}

/// Light English suffix stripping on `word:` tokens (Han tokens and
/// numbers unchanged): -ing, -ed, -ies, -es, -s, -ly.
fn stemmed(tokens: &[String]) -> Vec<String> {
    tokens
        .iter()
        .map(|t| match t.strip_prefix("word:") {
            Some(w) if w.chars().all(|c| c.is_ascii_alphabetic()) => format!("word:{}", stem(w)),
            _ => t.clone(),
        })
        .collect()
}

fn stem(w: &str) -> &str {
    let n = w.len();
    let cut =
        |suffix: &str, min_stem: usize| w.strip_suffix(suffix).filter(|s| s.len() >= min_stem);
    cut("ing", 3)
        .or_else(|| cut("ied", 3))
        .or_else(|| cut("ies", 3))
        .or_else(|| cut("ed", 3))
        .or_else(|| {
            if w.ends_with("sses")
                || w.ends_with("shes")
                || w.ends_with("ches")
                || w.ends_with("xes")
            {
                cut("es", 3)
            } else {
                None
            }
        })
        .or_else(|| {
            if w.ends_with("ss") || w.ends_with("us") || n <= 3 {
                None
            } else {
                cut("s", 3)
            }
        })
        .or_else(|| cut("ly", 4))
        .unwrap_or(w)
}

fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// The filters of a request, checked once for every channel: an unknown
/// intent, a date that does not parse or `from` after `to` is
/// [`MemoryError::InvalidFilter`]. Participants and type are kept only
/// when non-empty after normalization.
struct Filters {
    /// Participants, type, time and intent (text, limit and thread unset).
    query: EventQuery,
    /// Some participant, type or time filter is given.
    any: bool,
}

impl Filters {
    fn parse(r: &SearchRequest) -> Result<Self, MemoryError> {
        let intent = match r.intent.as_deref() {
            None => None,
            Some("first") => Some(Intent::First),
            Some("latest") => Some(Intent::Latest),
            Some(other) => {
                return Err(QueryError::InvalidFilter {
                    field: "intent",
                    value: other.to_owned(),
                    problem: FilterProblem::UnknownIntent,
                    other: None,
                }
                .into());
            }
        };
        let from = parse_time("from", r.from.as_deref())?;
        let to = parse_time("to", r.to.as_deref())?;
        if let (Some(f), Some(t)) = (from, to)
            && f > t
        {
            return Err(QueryError::InvalidFilter {
                field: "from",
                // Both are given: they parsed to `f` and `t`.
                value: r.from.clone().unwrap_or_default(),
                problem: FilterProblem::FromAfterTo,
                other: r.to.clone(),
            }
            .into());
        }
        let participants: Vec<String> = r
            .participants
            .iter()
            .filter(|p| !normalize(p).is_empty())
            .cloned()
            .collect();
        let event_type = r.event_type.clone().filter(|t| !normalize(t).is_empty());
        let any =
            !participants.is_empty() || event_type.is_some() || from.is_some() || to.is_some();
        Ok(Self {
            query: EventQuery {
                participants,
                event_type,
                from,
                to,
                intent,
                ..EventQuery::default()
            },
            any,
        })
    }
}

fn parse_time(field: &'static str, text: Option<&str>) -> Result<Option<Timestamp>, MemoryError> {
    let Some(text) = text else { return Ok(None) };
    if let Some(t) = strataflow_log::SourceTime::parse_rfc3339(text) {
        return Ok(Some(t.instant()));
    }
    // A bare date means that whole day: from its start, to its end.
    let day = chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").map_err(|_| {
        QueryError::InvalidFilter {
            field,
            value: text.to_owned(),
            problem: FilterProblem::NotATime,
            other: None,
        }
    })?;
    let start = day
        .and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc().timestamp_millis());
    let ms = match (field, start) {
        ("to", Some(s)) => s + 86_400_000 - 1,
        (_, Some(s)) => s,
        _ => return Ok(None),
    };
    Ok(Some(Timestamp(ms)))
}

impl Searcher {
    fn empty(profile: Option<&str>, tenant: &str, identity: &SearchIdentity) -> Self {
        Self {
            tenant: tenant.to_owned(),
            profile: profile.map(str::to_owned),
            last_seq: 0,
            resumed_from: None,
            saved_at: None,
            extractor: identity.extractor.clone(),
            events: EventIndex::new(),
            event_threads: BTreeMap::new(),
            block_threads: BTreeMap::new(),
            external: BTreeMap::new(),
            graph: GraphState::fold(&[], &|_| true),
            // No graph indexed yet: the first refresh builds it.
            graph_digest: String::new(),
            graph_index: GraphIndex::default(),
            raw: Bm25Index::new(),
            raw_stemmed: Bm25Index::new(),
            raw_docs: Vec::new(),
            next_in_thread: Vec::new(),
            last_in_thread: BTreeMap::new(),
        }
    }

    /// Takes one record of the catch-up (the next after `last_seq`): a
    /// message or block of the tenant enters the indexes, the events of
    /// its derivations (of the searcher's extractor) and imports are
    /// collected into `new_events`. True when the record is the tenant's
    /// and of a kind that can change the searcher or the views it reads
    /// ([`changes_search_views`]; not a retrieval batch, for one).
    fn take(&mut self, stored: StoredRecord, new_events: &mut Vec<RecordId>) -> bool {
        self.last_seq = stored.seq;
        if stored.record.tenant() != self.tenant {
            return false;
        }
        let changes = changes_search_views(stored.record.kind());
        match stored.record {
            Record::Message(m) => self.add_message(stored.id, m),
            Record::Block(b) => {
                self.block_threads.insert(stored.id, b.thread);
            }
            Record::Derivation(d)
                if d.operator == self.extractor.0
                    && d.config_hash == self.extractor.1
                    && d.outcome == strataflow_log::record::Outcome::Ok =>
            {
                new_events.extend(d.outputs);
            }
            // Imported events belong to every profile.
            Record::ImportSource(source) => {
                new_events.extend(source.decisions.iter().filter_map(|d| d.created_event));
            }
            _ => {}
        }
        changes
    }

    fn add_message(&mut self, id: RecordId, m: strataflow_log::record::Message) {
        let speaker = m
            .speaker
            .clone()
            .unwrap_or_else(|| m.role.label().to_owned());
        let text = format!("{speaker}: {}", m.content);
        let doc_tokens = weighted_tokens(&[(speaker.as_str(), 1), (m.content.as_str(), 1)]);
        self.raw_stemmed.add(&stemmed(&doc_tokens));
        self.raw.add(&doc_tokens);
        self.push_raw_doc(RawDoc {
            id,
            question: m.content.trim_end().ends_with('?'),
            said: m.time.instant(),
            speaker,
            external_id: m.external_id,
            thread: m.thread,
            // Never clipped: a hit counts only when its text holds the
            // whole message it cites.
            text: format!("{text} [said {}]", m.time.to_date()),
        });
    }

    /// Adds a raw doc (already in the BM25 indexes) and links it to its
    /// thread's previous message.
    fn push_raw_doc(&mut self, d: RawDoc) {
        let doc = self.raw_docs.len();
        if let Some(prev) = self.last_in_thread.insert(d.thread.clone(), doc)
            && let Some(slot) = self.next_in_thread.get_mut(prev)
        {
            *slot = Some(doc);
        }
        self.next_in_thread.push(None);
        self.external.insert(d.id, d.external_id.clone());
        self.raw_docs.push(d);
    }

    /// The snapshot (`docs/format.md`, search snapshot): version byte,
    /// checksum, then the body. The tables that follow from others (event
    /// threads, external ids, thread links) are not written.
    fn encode(&self, identity: &SearchIdentity) -> Result<Vec<u8>, MemoryError> {
        let mut e = Encoder::new();
        e.str(&self.tenant);
        e.str(&identity.extractor.0);
        e.raw(identity.extractor.1.as_bytes());
        e.str(&identity.projector.0);
        e.raw(identity.projector.1.as_bytes());
        e.u64(self.last_seq);
        e.str(&self.graph_digest);
        e.len(self.raw_docs.len());
        for d in &self.raw_docs {
            e.id(&d.id);
            e.str(&d.external_id);
            e.str(&d.thread);
            e.str(&d.text);
            e.u8(u8::from(d.question));
            e.str(&d.speaker);
            e.raw(&d.said.0.to_le_bytes());
        }
        self.raw.encode(&mut e);
        self.raw_stemmed.encode(&mut e);
        e.len(self.block_threads.len());
        for (id, thread) in &self.block_threads {
            e.id(id);
            e.str(thread);
        }
        self.events
            .encode(&mut e)
            .map_err(|err| MemoryError::Store(StoreError::Encode(err)))?;
        self.graph_index.encode(&mut e);
        let body = e.finish();
        let mut out = Vec::with_capacity(33 + body.len());
        out.push(SEARCH_SNAPSHOT_VERSION);
        out.extend_from_slice(&snapshot_checksum(&body));
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Reads a snapshot written by [`Searcher::encode`] for this tenant and
    /// these operators; anything else (other version, bad checksum, other
    /// tenant or operators, inconsistent tables) is an error.
    fn decode(
        bytes: &[u8],
        identity: &SearchIdentity,
        profile: Option<&str>,
        tenant: &str,
    ) -> Result<Self, SnapshotError> {
        let mut d = Decoder::new(bytes);
        let version = d.u8()?;
        if version != SEARCH_SNAPSHOT_VERSION {
            return Err(d.invalid(format!(
                "format version {version}; this build reads {SEARCH_SNAPSHOT_VERSION}"
            )));
        }
        let checksum = d.raw(32)?;
        // default: `d.raw(32)` after the version byte succeeded: at least 33 bytes.
        let body = bytes.get(33..).unwrap_or_default();
        if checksum != snapshot_checksum(body) {
            return Err(d.invalid("checksum mismatch"));
        }
        let mut s = Self::empty(profile, tenant, identity);
        if d.str()? != tenant {
            return Err(d.invalid("snapshot of another tenant"));
        }
        for (id, config) in [&identity.extractor, &identity.projector] {
            if d.str()? != id || d.raw(32)? != config.as_bytes() {
                return Err(d.invalid(format!("snapshot of other operators than {id}")));
            }
        }
        s.last_seq = d.u64()?;
        s.resumed_from = Some(s.last_seq);
        s.saved_at = Some(s.last_seq);
        s.graph_digest = d.string()?;
        let raw_count = d.count(32)?;
        let mut raw_docs = Vec::with_capacity(raw_count);
        for _ in 0..raw_count {
            raw_docs.push(RawDoc {
                id: d.id()?,
                external_id: d.string()?,
                thread: d.string()?,
                text: d.string()?,
                question: match d.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(d.invalid("question flag")),
                },
                speaker: d.string()?,
                said: Timestamp(i64::from_le_bytes(
                    d.raw(8)?
                        .try_into()
                        .map_err(|_| d.invalid("message time"))?,
                )),
            });
        }
        s.raw = Bm25Index::decode(&mut d)?;
        s.raw_stemmed = Bm25Index::decode(&mut d)?;
        if s.raw.doc_count() != raw_count || s.raw_stemmed.doc_count() != raw_count {
            return Err(d.invalid("raw messages and BM25 docs differ"));
        }
        s.next_in_thread.reserve(raw_count);
        for doc in raw_docs {
            s.push_raw_doc(doc);
        }
        let blocks = d.count(32)?;
        for _ in 0..blocks {
            let id = d.id()?;
            s.block_threads.insert(id, d.string()?);
        }
        s.events = EventIndex::decode(&mut d)?;
        s.event_threads = s
            .events
            .docs()
            .map(|doc| (doc.id, doc.thread.clone()))
            .collect();
        s.graph_index = GraphIndex::decode(&mut d)?;
        d.finish()?;
        Ok(s)
    }

    /// The last log sequence applied.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The sequence of the persisted snapshot this searcher resumed from;
    /// `None` when it was built from the first record (no snapshot, or one
    /// that could not be trusted).
    pub fn resumed_from(&self) -> Option<u64> {
        self.resumed_from
    }

    /// blake3 hex over the indexed content: the raw messages' ids in id
    /// order, events with their status, and the graph's digest (weights are
    /// floats and follow from the weights view, whose digest covers them).
    /// Documents are numbered in log order inside the index, but no answer
    /// depends on that numbering (ties rank by record id), so the digest
    /// covers the set: two tenants with the same messages in the same order
    /// per thread have the same search view however their threads
    /// interleaved.
    pub fn digest(&self) -> String {
        let mut h = blake3::Hasher::new_derive_key("strataflow view search v2");
        let mut raw: Vec<&RecordId> = self.raw_docs.iter().map(|d| &d.id).collect();
        raw.sort_unstable();
        for id in raw {
            h.update(id.as_bytes());
        }
        for id in self.event_threads.keys() {
            h.update(id.as_bytes());
            let status = self.events.get(id).map_or(0u8, |d| d.status as u8);
            h.update(&[status]);
        }
        h.update(self.graph_digest.as_bytes());
        h.finalize().to_hex().to_string()
    }

    /// The event index (every event with its status).
    pub(crate) fn event_index(&self) -> &EventIndex {
        &self.events
    }

    /// Events in the index.
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// Hits of one channel (or all, fused), cut by the budget.
    pub fn search(
        &self,
        channel: Channel,
        r: &SearchRequest,
    ) -> Result<Vec<SearchHit>, MemoryError> {
        self.search_with_dense(channel, r, &[])
    }

    /// [`Searcher::search`] with a dense ranking (record ids of messages and
    /// events, most similar first, from [`Memory::dense_search`]): in
    /// [`Channel::All`] it is a fourth RRF list of the same weight as each
    /// of the three others, fused (with a budget) below the lexical hits
    /// that fill the first [`LEXICAL_FIRST_WORDS`] words (those keep the
    /// order they have without it), used when no participant, type or time filter is given
    /// (the thread filter applies to it). Other channels ignore it.
    pub fn search_with_dense(
        &self,
        channel: Channel,
        r: &SearchRequest,
        dense: &[RecordId],
    ) -> Result<Vec<SearchHit>, MemoryError> {
        let filters = Filters::parse(r)?;
        // Fused searches draw up to 20 hits from each channel, then cut by
        // the budget (or the limit); a single channel uses the limit.
        let per_channel = match channel {
            Channel::All => Some(20),
            _ => r.limit,
        };
        let mut hits = match channel {
            Channel::Events => self.events(r, &filters, per_channel),
            Channel::Graph => self.nodes(r, &filters, per_channel, false),
            Channel::Raw => self.raw(r, &filters, per_channel, false),
            Channel::All => {
                let focused = SearchRequest {
                    query: focus(&r.query),
                    ..r.clone()
                };
                let r = &focused;
                let mut lists = vec![
                    self.events(r, &filters, per_channel),
                    self.nodes(r, &filters, per_channel, true),
                    self.raw(r, &filters, per_channel, true),
                ];
                if !dense.is_empty() && !filters.any && filters.query.event_type.is_none() {
                    lists.push(self.dense_hits(r, dense));
                }
                let rankings: Vec<Vec<String>> = lists
                    .iter()
                    .map(|l| l.iter().map(|h| h.reference.clone()).collect())
                    .collect();
                let mut by_ref: BTreeMap<String, SearchHit> = BTreeMap::new();
                for h in lists.into_iter().flatten() {
                    by_ref.entry(h.reference.clone()).or_insert(h);
                }
                // A hit whose messages are all stated by earlier hits adds
                // nothing but words: the raw message behind an event, or an
                // event already quoted. A node's facts do not state their
                // messages (`painted: lake sunrise` is not what was said),
                // so a node never covers them for later hits.
                let mut fused: Vec<SearchHit> = Vec::new();
                let mut covered: Vec<String> = Vec::new();
                if rankings.len() > 3 {
                    // With a budget, the lexical hits that fill the first
                    // LEXICAL_FIRST_WORDS words come first, as without the
                    // dense list; the four lists fused rank what follows.
                    if r.budget.is_some() {
                        let lexical = rrf(rankings.get(..3).unwrap_or_default(), RRF_K);
                        let first = Some(LEXICAL_FIRST_WORDS);
                        take_fused(lexical, &mut by_ref, &mut covered, &mut fused, first);
                    }
                    let weighted: Vec<(Vec<String>, f64)> = rankings
                        .into_iter()
                        .enumerate()
                        .map(|(i, r)| (r, if i == 3 { DENSE_WEIGHT } else { 1.0 }))
                        .collect();
                    let all = rrf_weighted(&weighted, RRF_K);
                    take_fused(all, &mut by_ref, &mut covered, &mut fused, None);
                } else {
                    let lexical = rrf(&rankings, RRF_K);
                    take_fused(lexical, &mut by_ref, &mut covered, &mut fused, None);
                }
                if r.budget.is_none() {
                    fused.truncate(r.limit.unwrap_or(8).clamp(1, 60));
                }
                fused
            }
        };
        if let Some(budget) = r.budget {
            let mut used = 0usize;
            let mut kept = Vec::new();
            for h in hits {
                if used + h.words > budget {
                    break;
                }
                used += h.words;
                kept.push(h);
            }
            hits = kept;
        }
        Ok(hits)
    }

    fn events(&self, r: &SearchRequest, f: &Filters, limit: Option<usize>) -> Vec<SearchHit> {
        let q = EventQuery {
            text: r.query.clone(),
            limit: limit.unwrap_or(6),
            thread: r.thread.clone(),
            ..f.query.clone()
        };
        let mut out = Vec::new();
        for (id, score) in self.events.search(&q) {
            if let Some(hit) = self.event_hit(id, score) {
                out.push(hit);
            }
        }
        out
    }

    /// The hit of event `id`, if the index holds it.
    fn event_hit(&self, id: RecordId, score: f64) -> Option<SearchHit> {
        let doc = self.events.get(&id)?;
        let e = &doc.event;
        let when = match (e.temporal.happened_start, e.temporal.happened_end) {
            (Some(s), Some(t)) if s.to_date() == t.to_date() => {
                format!("happened {}", s.to_date())
            }
            (Some(s), Some(t)) => format!("happened {} to {}", s.to_date(), t.to_date()),
            _ => format!("said {}", e.temporal.mentioned_at.to_date()),
        };
        let text = format!("{} [{when}]", e.summary);
        Some(SearchHit {
            reference: format!("event:{id}"),
            kind: "event",
            score,
            words: word_count(&text),
            text,
            source_messages: e
                .source_messages
                .iter()
                .map(|m| self.external.get(m).cloned().unwrap_or_else(|| m.to_hex()))
                .collect(),
            thread: self.event_threads.get(&id).cloned(),
            title: Some(e.title.clone()),
            happened_start: e.temporal.happened_start,
            happened_end: e.temporal.happened_end,
            precision: Some(e.temporal.precision),
            participants: e.temporal.participants.clone(),
            block: Some(e.block),
            target: Some(EvidenceRef {
                kind: RefKind::Event,
                id,
                level: None,
            }),
        })
    }

    /// The dense list of a fused search: the events and messages of
    /// `dense` this index holds (in the thread asked, if any), in order.
    fn dense_hits(&self, r: &SearchRequest, dense: &[RecordId]) -> Vec<SearchHit> {
        let thread = r.thread.as_deref();
        let mut out = Vec::new();
        for (rank, id) in dense.iter().enumerate() {
            // default: a rank as a score, most similar first.
            let score = 1.0 / (1.0 + rank as f64);
            if let Some(hit) = self.event_hit(*id, score) {
                if thread.is_none_or(|t| self.event_threads.get(id).is_some_and(|x| x == t)) {
                    out.push(hit);
                }
                continue;
            }
            let Some(doc) = self.raw_docs.iter().position(|d| d.id == *id) else {
                continue;
            };
            if let Some(d) = self.raw_docs.get(doc)
                && thread.is_none_or(|t| d.thread == t)
                && let Some(hit) = self.raw_hit(doc, score, true)
            {
                out.push(hit);
            }
        }
        out
    }

    /// Graph node hits: nodes with current facts, their text the facts that
    /// fit in 300 characters. With `about`, nodes matched by name only are
    /// left out.
    ///
    /// With event filters (participants, type, time), a node shows only
    /// the facts stated by events that pass them (and are not forgotten),
    /// and a node with no such fact is left out: a filter never lets a
    /// non-matching event through a node. The thread filter does not apply
    /// to nodes (the graph is the tenant's).
    fn nodes(
        &self,
        r: &SearchRequest,
        f: &Filters,
        limit: Option<usize>,
        about: bool,
    ) -> Vec<SearchHit> {
        let fact_ok = |fact: &&strataflow_materializers::graph_state::FactState| {
            !f.any
                || fact.source_events.iter().any(|e| {
                    self.events
                        .get(e)
                        .is_some_and(|d| !d.status.is_hidden() && f.query.matches(&d.event))
                })
        };
        let query_words: std::collections::BTreeSet<String> = tokens(&r.query)
            .into_iter()
            .filter(|w| {
                !strataflow_operators::text::is_stop_word(w.strip_prefix("word:").unwrap_or(w))
            })
            .collect();
        let mut out = Vec::new();
        for hit in self.graph_index.search(&r.query, limit.unwrap_or(8)) {
            // In a fused search, a node matched only by its name (the person
            // the question is about) says nothing about the question.
            if about
                && hit
                    .matched_fields
                    .iter()
                    .all(|f| matches!(*f, "name" | "aliases" | "type"))
            {
                continue;
            }
            let Some(node) = self.graph.node(&hit.key) else {
                continue;
            };
            let current: Vec<_> = node
                .facts
                .iter()
                .filter(|fact| fact.current)
                .filter(fact_ok)
                .collect();
            if f.any && current.is_empty() {
                continue;
            }
            // The facts that share the most words with the query first (in
            // a fused search only those, at most three: a person node can
            // hold hundreds of facts, and the others would spend the
            // budget on what the question does not ask), then in order,
            // until the text would pass 300 characters; the hit cites
            // exactly the messages behind the facts it shows.
            let mut ranked: Vec<(usize, &&strataflow_materializers::graph_state::FactState)> =
                current
                    .iter()
                    .map(|fact| {
                        let words: std::collections::BTreeSet<String> =
                            tokens(&format!("{} {}", fact.key, fact.values.join(" ")))
                                .into_iter()
                                .collect();
                        (
                            query_words.iter().filter(|w| words.contains(*w)).count(),
                            fact,
                        )
                    })
                    .collect();
            ranked.sort_by_key(|(overlap, _)| std::cmp::Reverse(*overlap));
            if about {
                ranked.retain(|(overlap, _)| *overlap > 0);
                ranked.truncate(FUSED_NODE_FACTS);
                if ranked.is_empty() {
                    continue;
                }
            }
            let mut text = format!("{} ({:?}):", node.name, node.node_type);
            let mut shown: Vec<RecordId> = Vec::new();
            for (_, fact) in &ranked {
                let line = format!(" {}: {};", fact.key, fact.values.join(", "));
                if text.chars().count() + line.chars().count() > 300 {
                    break;
                }
                text.push_str(&line);
                shown.extend(fact.source_events.iter().copied());
            }
            let mut messages: Vec<String> = Vec::new();
            for e in shown {
                if let Some(doc) = self.events.get(&e) {
                    for m in &doc.event.source_messages {
                        let ext = self.external.get(m).cloned().unwrap_or_else(|| m.to_hex());
                        if !messages.contains(&ext) {
                            messages.push(ext);
                        }
                    }
                }
            }
            // default: A node is folded from its assertions: it has at least one.
            let id = node.assertions.first().copied().unwrap_or_default();
            out.push(SearchHit {
                reference: format!("node:{id}"),
                kind: "node",
                score: hit.score,
                words: word_count(&text),
                text,
                source_messages: messages,
                thread: None,
                title: Some(node.name.clone()),
                happened_start: None,
                happened_end: None,
                precision: None,
                participants: Vec::new(),
                block: None,
                target: Some(EvidenceRef {
                    kind: RefKind::Node,
                    id,
                    level: None,
                }),
            });
        }
        out
    }

    /// Raw message hits. With `answers`, a message that asks a question
    /// comes with the next message of its thread (the answer is where the
    /// fact is); its text then holds both, and so do its source messages.
    /// In the fused search (`answers`), words are also stemmed ("painted",
    /// "paintings" → "paint"); the raw channel alone stays plain BM25.
    ///
    /// Filters restrict the messages searched (BM25 statistics are then
    /// over those): the thread; `from`/`to`, on when the message was said;
    /// participants, each fuzzy-matching its speaker; and a type, which no
    /// message has, leaves none.
    fn raw(
        &self,
        r: &SearchRequest,
        f: &Filters,
        limit: Option<usize>,
        answers: bool,
    ) -> Vec<SearchHit> {
        if f.query.event_type.is_some() {
            return Vec::new();
        }
        let (index, q) = if answers {
            (&self.raw_stemmed, stemmed(&tokens(&r.query)))
        } else {
            (&self.raw, tokens(&r.query))
        };
        let thread = r.thread.as_deref();
        let mut ranked = if thread.is_some() || f.any {
            index.search(&q, &|doc| {
                self.raw_docs.get(doc as usize).is_some_and(|d| {
                    thread.is_none_or(|t| d.thread == t)
                        && f.query.from.is_none_or(|from| d.said >= from)
                        && f.query.to.is_none_or(|to| d.said <= to)
                        && f.query
                            .participants
                            .iter()
                            .all(|p| fuzzy_match(&d.speaker, p))
                })
            })
        } else {
            index.search_all(&q)
        };
        // Ties rank by record id, not by the doc number (the log order), so
        // the answer depends only on the indexed messages. The ranking is
        // already sorted by score: this pass only reorders equal runs.
        let id_of = |doc: u32| self.raw_docs.get(doc as usize).map(|d| d.id);
        ranked.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| id_of(a.0).cmp(&id_of(b.0)))
        });
        ranked
            .into_iter()
            .take(limit.unwrap_or(6).clamp(1, 60))
            .filter_map(|(doc, score)| self.raw_hit(doc as usize, score, answers))
            .collect()
    }

    /// The hit of raw document `doc`; with `answers`, a question carries
    /// the message after it.
    fn raw_hit(&self, doc: usize, score: f64, answers: bool) -> Option<SearchHit> {
        let d = self.raw_docs.get(doc)?;
        let mut text = d.text.clone();
        let mut source_messages = vec![d.external_id.clone()];
        if answers
            && d.question
            && let Some(next) = self
                .next_in_thread
                .get(doc)
                .copied()
                .flatten()
                .and_then(|n| self.raw_docs.get(n))
        {
            text = format!("{text} {}", next.text);
            source_messages.push(next.external_id.clone());
        }
        Some(SearchHit {
            reference: format!("msg:{}", d.id),
            kind: "message",
            score,
            words: word_count(&text),
            text,
            source_messages,
            thread: Some(d.thread.clone()),
            title: None,
            happened_start: None,
            happened_end: None,
            precision: None,
            participants: Vec::new(),
            block: None,
            target: Some(EvidenceRef {
                kind: RefKind::Message,
                id: d.id,
                level: None,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_common_english_suffixes_only() {
        for (w, s) in [
            ("painting", "paint"),
            ("painted", "paint"),
            ("paints", "paint"),
            ("pets", "pet"),
            ("studies", "stud"),
            ("studied", "stud"),
            ("boxes", "box"),
            ("glass", "glass"),
            ("bus", "bus"),
            ("really", "real"),
            ("sing", "sing"),
            ("red", "red"),
        ] {
            assert_eq!(stem(w), s, "{w}");
        }
        assert_eq!(
            stemmed(&["han2:记忆".into(), "word:2023".into()]),
            ["han2:记忆", "word:2023"]
        );
    }

    #[test]
    fn focus_drops_stop_words_unless_nothing_remains() {
        assert_eq!(
            focus("When did Caroline go to the support group?"),
            "Caroline support group?"
        );
        assert_eq!(focus("what is it"), "what is it");
        assert_eq!(focus("what is it?"), "what is it?");
    }

    /// The focused query's tokens are the index tokens of the query minus
    /// the stop words: a query word matches the token the index made of the
    /// same word in a document.
    #[test]
    fn focused_query_tokens_are_the_index_tokens() {
        for (query, document) in [
            ("When did Caroline’s mom visit?", "Caroline’s mom came"),
            ("how much was the 3.5 kg cat", "a 3.5 kg cat"),
            ("did she e-mail Dr. Patel", "she e-mailed Dr. Patel"),
            ("where is Zoë's café", "Zoë's café"),
            ("the ＡＢＣ plan in 2023", "abc plan 2023"),
            ("was it 記憶系統", "記憶系統"),
            ("don't rock'n'roll", "rock'n'roll"),
        ] {
            let index = tokens(document);
            let kept: Vec<String> = tokens(query)
                .into_iter()
                .filter(|t| {
                    t.strip_prefix("word:").is_none_or(|w| {
                        !strataflow_operators::text::is_stop_word(&w.replace('’', "'"))
                    })
                })
                .collect();
            assert_eq!(tokens(&focus(query)), kept, "{query}");
            let shared: Vec<&String> = kept.iter().filter(|t| index.contains(t)).collect();
            assert!(
                !shared.is_empty(),
                "{query} shares no token with {document}"
            );
        }
    }
}
