//! An inverted index ranked by Okapi BM25 (spec §11.2, `bm25Rank`).
//!
//! Documents are token lists (see [`super::tokenizer`]) identified by `u32`
//! doc numbers assigned in insertion order (0, 1, 2, …; never reused). The
//! index stores, per term, a posting list of `(doc, tf)` sorted by doc, and
//! per doc its length (token count, duplicates included). Terms are found
//! through a hash map that is only looked up, never iterated, so no hash
//! order can reach a result. Adding a doc costs `O(n log n)` for its `n`
//! tokens (about 3 µs for 12 tokens in a release build; 1M such docs over a
//! 50k-term vocabulary index in a few seconds and answer a 4-term
//! `search_all` in well under a millisecond — see the ignored
//! `one_million_docs` test).
//!
//! ## Scoring
//!
//! With `k1 = 1.2`, `b = 0.75`, query terms = the *unique* query tokens (in
//! order of first occurrence), and statistics over the candidate set:
//! `N` = number of candidates, `avgdl` = mean candidate length (`0 → 1`),
//! `df(t)` = number of candidates containing `t`,
//!
//! ```text
//! idf(t)   = ln(1 + (N − df + 0.5) / (df + 0.5))
//! score(d) = Σ_{t ∈ terms, tf > 0} idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·|d| / avgdl))
//! ```
//!
//! summed per document in query-term order. Only `score > 0` is kept
//! (always the case for a document containing a term); results are sorted by
//! score descending, then doc number ascending. No terms, or no candidate,
//! gives `[]`.
//!
//! ## Candidate sets and cost
//!
//! - [`Bm25Index::search_all`]: every live doc is a candidate. `N` and
//!   `avgdl` come from running totals, `df` from the posting lists of the
//!   query terms (skipping removed docs), so a query costs
//!   `O(P · log T)` for `P` postings of its `T` terms.
//! - [`Bm25Index::search`]: the candidates are the live docs accepted by a
//!   filter, and (as the reference recomputes statistics per query over the
//!   candidates after status/scope filtering) `N`, `avgdl` and `df` are
//!   computed over them. This calls the filter once per live doc and sums
//!   their lengths, `O(D)` for `D` docs, then walks the query terms'
//!   postings as above. Use it for scoped queries; use `search_all` when
//!   nothing is filtered.
//!
//! ## Removal
//!
//! [`Bm25Index::remove`] tombstones a doc: it leaves every statistic and
//! result at once (running totals are updated; posting walks skip it). The
//! dead postings are dropped when tombstones outnumber live docs (and there
//! are at least [`COMPACT_MIN_DEAD`] of them), or on [`Bm25Index::compact`].
//!
//! Scores are computed with the same sequence of floating-point operations
//! whatever the insertion history, so results are deterministic.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

use crate::snapshot::{Decoder, Encoder, SnapshotError, SnapshotProblem};

// Doc and term numbers are `u32`; they index vectors as `usize`, which is at
// least 32 bits on every target this builds for (checked here), so the
// conversion is lossless and needs no fallback.
const _: () = assert!(usize::BITS >= u32::BITS);

/// A doc or term number as a vector index (lossless, see above).
#[allow(clippy::cast_possible_truncation)]
pub(crate) const fn index(n: u32) -> usize {
    n as usize
}

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalization.
pub const B: f64 = 0.75;
/// Automatic compaction waits for at least this many removed docs.
pub const COMPACT_MIN_DEAD: usize = 1024;
/// Returned by [`Bm25Index::add`] when the index is full (`u32::MAX − 1`
/// documents were added); nothing is stored then.
pub const NO_DOC: u32 = u32::MAX;

/// One posting: a document and the term's frequency in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Posting {
    doc: u32,
    tf: u32,
}

/// A BM25 inverted index. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct Bm25Index {
    /// Term → term number. Only looked up, never iterated, so its order
    /// cannot reach a result.
    terms: HashMap<String, u32>,
    /// Postings sorted by doc, by term number.
    postings: Vec<Vec<Posting>>,
    /// Length of every doc ever added, by doc number.
    lens: Vec<u32>,
    /// Whether each doc is live (not removed).
    live: Vec<bool>,
    /// Number of live docs.
    live_count: usize,
    /// Sum of the lengths of the live docs.
    live_total_len: u64,
    /// Docs removed since the last compaction.
    dead: usize,
}

/// One query term during a search: its idf and its postings.
struct Lane<'a> {
    idf: f64,
    list: &'a [Posting],
}

/// The contribution of one term to one doc's score.
fn term_score(idf: f64, tf: u32, len: u32, avgdl: f64) -> f64 {
    let tf = f64::from(tf);
    let dl = f64::from(len);
    idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + (B * dl) / avgdl)))
}

/// `ln(1 + (N − df + 0.5) / (df + 0.5))`.
fn idf(n: f64, df: f64) -> f64 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The unique query terms, in order of first occurrence.
fn unique_terms(query_tokens: &[String]) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    query_tokens
        .iter()
        .map(String::as_str)
        .filter(|t| seen.insert(*t))
        .collect()
}

impl Bm25Index {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a document and returns its doc number (the number of docs added
    /// before it). The doc's length is `tokens.len()`; an empty doc is a
    /// valid candidate (it counts in `N` and `avgdl`) that matches nothing.
    /// Returns [`NO_DOC`] and stores nothing once `u32::MAX − 1` docs were
    /// added.
    pub fn add(&mut self, tokens: &[String]) -> u32 {
        let Ok(doc) = u32::try_from(self.lens.len()) else {
            return NO_DOC;
        };
        if doc == NO_DOC {
            return NO_DOC;
        }
        let mut sorted: Vec<&str> = tokens.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        let mut i = 0;
        while let Some(term) = sorted.get(i).copied() {
            let run = sorted
                .get(i..)
                .map_or(0, |rest| rest.iter().take_while(|t| **t == term).count());
            let tf = u32::try_from(run).unwrap_or(u32::MAX);
            let posting = Posting { doc, tf };
            match self
                .terms
                .get(term)
                .map(|t| index(*t))
                .and_then(|t| self.postings.get_mut(t))
            {
                Some(list) => list.push(posting),
                None => {
                    let t = u32::try_from(self.postings.len()).unwrap_or(u32::MAX);
                    self.terms.insert(term.to_owned(), t);
                    self.postings.push(vec![posting]);
                }
            }
            i += run.max(1);
        }
        let len = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
        self.lens.push(len);
        self.live.push(true);
        self.live_count += 1;
        self.live_total_len += u64::from(len);
        doc
    }

    /// Removes a document: from now on it is no candidate and counts in no
    /// statistic. Unknown or already removed docs are ignored.
    pub fn remove(&mut self, doc: u32) {
        let i = index(doc);
        let Some(slot) = self.live.get_mut(i) else {
            return;
        };
        if !*slot {
            return;
        }
        *slot = false;
        self.live_count -= 1;
        self.live_total_len -= self.lens.get(i).copied().map_or(0, u64::from);
        self.dead += 1;
        if self.dead >= COMPACT_MIN_DEAD && self.dead > self.live_count {
            self.compact();
        }
    }

    /// Drops the postings of removed docs (`O(total postings)`). Results
    /// and doc numbers are unchanged.
    pub fn compact(&mut self) {
        let live = &self.live;
        for list in &mut self.postings {
            list.retain(|p| Self::live_in(live, p.doc));
            list.shrink_to_fit();
        }
        self.dead = 0;
    }

    /// Number of docs ever added (live or removed): the next doc number.
    pub fn doc_count(&self) -> usize {
        self.lens.len()
    }

    /// Number of live docs.
    pub fn len(&self) -> usize {
        self.live_count
    }

    /// Whether there is no live doc.
    pub fn is_empty(&self) -> bool {
        self.live_count == 0
    }

    /// Whether `doc` was added and not removed.
    pub fn contains(&self, doc: u32) -> bool {
        Self::live_in(&self.live, doc)
    }

    /// The length (token count) of a live doc.
    pub fn doc_len(&self, doc: u32) -> Option<u32> {
        if !self.contains(doc) {
            return None;
        }
        self.lens.get(index(doc)).copied()
    }

    /// Number of distinct terms ever added (terms of removed docs stay
    /// known, with empty postings after compaction).
    pub fn term_count(&self) -> usize {
        self.terms.len()
    }

    fn live_in(live: &[bool], doc: u32) -> bool {
        live.get(index(doc)).copied().unwrap_or(false)
    }

    /// Ranks every live doc (the fast path: statistics from running totals;
    /// cost `O(P · log T)` for the `P` postings of the `T` query terms).
    /// Returns `(doc, score)` sorted by score descending, then doc.
    pub fn search_all(&self, query_tokens: &[String]) -> Vec<(u32, f64)> {
        let terms = unique_terms(query_tokens);
        if terms.is_empty() || self.live_count == 0 {
            return Vec::new();
        }
        let live = |doc: u32| Self::live_in(&self.live, doc);
        let (n, total) = (self.live_count as f64, self.live_total_len as f64);
        self.rank(&terms, n, total, &live)
    }

    /// The best `k` of [`Bm25Index::search_all`], exactly (same scores, same
    /// order, same ties), without sorting every match: scores are summed
    /// term by term into a dense accumulator (in query-term order, so each
    /// sum is bit-identical to the merge's) and only the top `k` are sorted.
    pub fn search_top(&self, query_tokens: &[String], k: usize) -> Vec<(u32, f64)> {
        self.search_top_by(query_tokens, k, &|doc| doc)
    }

    /// [`Bm25Index::search_top`] with ties broken by `tie(doc)` ascending
    /// instead of the doc number (e.g. the record id the doc stands for).
    pub fn search_top_by<T: Ord>(
        &self,
        query_tokens: &[String],
        k: usize,
        tie: &dyn Fn(u32) -> T,
    ) -> Vec<(u32, f64)> {
        let terms = unique_terms(query_tokens);
        if terms.is_empty() || self.live_count == 0 || k == 0 {
            return Vec::new();
        }
        let n = self.live_count as f64;
        let total = self.live_total_len as f64;
        let avgdl = if n > 0.0 && total > 0.0 {
            total / n
        } else {
            1.0
        };
        let live = |doc: u32| Self::live_in(&self.live, doc);
        let mut acc: Vec<f64> = vec![0.0; self.lens.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in terms {
            let Some(list) = self
                .terms
                .get(term)
                .map(|t| index(*t))
                .and_then(|t| self.postings.get(t))
            else {
                continue;
            };
            let df = if self.dead == 0 {
                list.len()
            } else {
                list.iter().filter(|p| live(p.doc)).count()
            };
            if df == 0 {
                continue;
            }
            let term_idf = idf(n, df as f64);
            for p in list {
                if self.dead > 0 && !live(p.doc) {
                    continue;
                }
                let i = index(p.doc);
                let len = self.lens.get(i).copied().unwrap_or(0);
                if let Some(slot) = acc.get_mut(i) {
                    if *slot == 0.0 {
                        touched.push(p.doc);
                    }
                    *slot += term_score(term_idf, p.tf, len, avgdl);
                }
            }
        }
        let mut out: Vec<(u32, f64)> = touched
            .into_iter()
            .filter_map(|d| {
                let score = acc.get(index(d)).copied()?;
                (score > 0.0).then_some((d, score))
            })
            .collect();
        let order = |a: &(u32, f64), b: &(u32, f64)| {
            b.1.total_cmp(&a.1).then_with(|| tie(a.0).cmp(&tie(b.0)))
        };
        if out.len() > k {
            out.select_nth_unstable_by(k - 1, order);
            out.truncate(k);
        }
        out.sort_by(order);
        out
    }

    /// Ranks the live docs for which `filter` returns true, with `N`,
    /// `avgdl` and `df` computed over exactly those docs (spec §11.2:
    /// statistics are recomputed per query over the candidate set). Calls
    /// `filter` once per live doc (`O(D)`), then costs as
    /// [`Bm25Index::search_all`]. Returns `(doc, score)` sorted by score
    /// descending, then doc.
    pub fn search(&self, query_tokens: &[String], filter: &dyn Fn(u32) -> bool) -> Vec<(u32, f64)> {
        let terms = unique_terms(query_tokens);
        if terms.is_empty() || self.live_count == 0 {
            return Vec::new();
        }
        let mut accepted = vec![false; self.lens.len()];
        let mut n: u64 = 0;
        let mut total: u64 = 0;
        for ((slot, live), (doc, len)) in accepted
            .iter_mut()
            .zip(&self.live)
            .zip((0u32..).zip(&self.lens))
        {
            if *live && filter(doc) {
                *slot = true;
                n += 1;
                total += u64::from(*len);
            }
        }
        if n == 0 {
            return Vec::new();
        }
        let accept = |doc: u32| accepted.get(index(doc)).copied().unwrap_or(false);
        let (n, total) = (n as f64, total as f64);
        self.rank(&terms, n, total, &accept)
    }

    /// Scores the accepted docs for `terms`, given `N` and the total length
    /// of the candidates.
    fn rank(
        &self,
        terms: &[&str],
        n: f64,
        total_len: f64,
        accept: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f64)> {
        let avgdl = if n > 0.0 && total_len > 0.0 {
            total_len / n
        } else {
            1.0
        };
        // Per term: df over the candidates, then idf.
        let mut lanes: Vec<Lane<'_>> = Vec::with_capacity(terms.len());
        for term in terms {
            let Some(list) = self
                .terms
                .get(*term)
                .map(|t| index(*t))
                .and_then(|t| self.postings.get(t))
            else {
                continue;
            };
            let df = list.iter().filter(|p| accept(p.doc)).count();
            if df == 0 {
                continue;
            }
            let df = df as f64;
            lanes.push(Lane {
                idf: idf(n, df),
                list,
            });
        }
        // k-way merge of the posting lists by (doc, lane): each doc's score
        // is summed in query-term order.
        let next = |lane: usize, mut pos: usize| -> Option<Reverse<(u32, usize, usize)>> {
            let list = lanes.get(lane)?.list;
            while let Some(p) = list.get(pos) {
                if accept(p.doc) {
                    return Some(Reverse((p.doc, lane, pos)));
                }
                pos += 1;
            }
            None
        };
        let mut heap: BinaryHeap<Reverse<(u32, usize, usize)>> =
            (0..lanes.len()).filter_map(|lane| next(lane, 0)).collect();
        let mut out: Vec<(u32, f64)> = Vec::new();
        let mut current: Option<(u32, f64)> = None;
        while let Some(Reverse((doc, lane, pos))) = heap.pop() {
            if let (Some(l), Some(p)) = (
                lanes.get(lane),
                lanes.get(lane).and_then(|l| l.list.get(pos)),
            ) {
                // default: never taken, a posting's doc is one of `lens`
                // (`add` and `decode` ensure it).
                let len = self.lens.get(index(doc)).copied().unwrap_or(0);
                let s = term_score(l.idf, p.tf, len, avgdl);
                match current.as_mut() {
                    Some((d, acc)) if *d == doc => *acc += s,
                    _ => {
                        out.extend(current.take());
                        current = Some((doc, s));
                    }
                }
            }
            heap.extend(next(lane, pos + 1));
        }
        out.extend(current);
        out.retain(|(_, s)| *s > 0.0);
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

/// Snapshot encoding ([`crate::snapshot`]).
impl Bm25Index {
    /// Writes the index: its doc count, the lengths of every doc, the
    /// removed docs (ascending, delta-coded), the number removed since the
    /// last compaction, then per term (in term-number order) its text and
    /// its postings (doc delta-coded, tf).
    pub fn encode(&self, e: &mut Encoder) {
        e.len(self.lens.len());
        for len in &self.lens {
            e.u32(*len);
        }
        let removed: Vec<u32> = (0u32..)
            .zip(&self.live)
            .filter(|(_, live)| !**live)
            .map(|(doc, _)| doc)
            .collect();
        e.len(removed.len());
        let mut prev = 0u32;
        for doc in removed {
            e.u32(doc - prev);
            prev = doc;
        }
        e.len(self.dead);
        let mut names: Vec<&str> = vec![""; self.terms.len()];
        for (term, n) in &self.terms {
            if let Some(slot) = names.get_mut(index(*n)) {
                *slot = term.as_str();
            }
        }
        e.len(self.postings.len());
        for (name, list) in names.iter().zip(&self.postings) {
            e.str(name);
            e.len(list.len());
            let mut prev = 0u32;
            for p in list {
                e.u32(p.doc - prev);
                e.u32(p.tf);
                prev = p.doc;
            }
        }
    }

    /// Reads an index written by [`Bm25Index::encode`], checking that it is
    /// consistent: postings sorted by doc and within the doc count, distinct
    /// terms, removed docs known, and postings of removed docs only when
    /// removals are pending compaction.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self, SnapshotError> {
        let docs = d.count(1)?;
        let mut lens = Vec::with_capacity(docs);
        let mut live_total_len = 0u64;
        for _ in 0..docs {
            let len = d.u32()?;
            live_total_len += u64::from(len);
            lens.push(len);
        }
        let mut live = vec![true; docs];
        let removed = d.count(1)?;
        let mut doc = 0u32;
        for i in 0..removed {
            let delta = d.u32()?;
            if i > 0 && delta == 0 {
                return Err(d.invalid(SnapshotProblem::RemovedNotAscending { after: doc }));
            }
            doc = doc.checked_add(delta).ok_or_else(|| {
                d.invalid(SnapshotProblem::RemovedOverflows { after: doc, delta })
            })?;
            let slot = live
                .get_mut(index(doc))
                .ok_or_else(|| d.invalid(SnapshotProblem::RemovedUnknown { doc, docs }))?;
            *slot = false;
            live_total_len -= lens.get(index(doc)).copied().map_or(0, u64::from);
        }
        let dead = d.count(0)?;
        if dead > removed {
            return Err(d.invalid(SnapshotProblem::PendingRemovals {
                pending: dead,
                removed,
            }));
        }
        let term_count = d.count(2)?;
        let mut terms = HashMap::with_capacity(term_count);
        let mut postings = Vec::with_capacity(term_count);
        for t in 0..term_count {
            let name = d.string()?;
            let n = u32::try_from(t).map_err(|_| {
                d.invalid(SnapshotProblem::TooManyRows {
                    table: "terms",
                    row: t,
                })
            })?;
            if terms.contains_key(&name) {
                return Err(d.invalid(SnapshotProblem::Repeated {
                    table: "term",
                    name,
                }));
            }
            terms.insert(name, n);
            let count = d.count(2)?;
            let mut list = Vec::with_capacity(count);
            let mut doc = 0u32;
            for i in 0..count {
                let delta = d.u32()?;
                if i > 0 && delta == 0 {
                    return Err(d.invalid(SnapshotProblem::PostingsNotSorted { after: doc }));
                }
                doc = doc.checked_add(delta).ok_or_else(|| {
                    d.invalid(SnapshotProblem::PostingOverflows { after: doc, delta })
                })?;
                match live.get(index(doc)) {
                    None => return Err(d.invalid(SnapshotProblem::PostingUnknownDoc { doc, docs })),
                    Some(false) if dead == 0 => {
                        return Err(d.invalid(SnapshotProblem::PostingOfRemovedDoc { doc }));
                    }
                    Some(_) => {}
                }
                list.push(Posting { doc, tf: d.u32()? });
            }
            postings.push(list);
        }
        Ok(Self {
            terms,
            postings,
            lens,
            live,
            live_count: docs - removed,
            live_total_len,
            dead,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_doc_out_of_range_names_the_doc_and_the_doc_count() {
        let mut e = Encoder::new();
        e.len(1); // one doc
        e.u32(3); // of 3 tokens
        e.len(1); // one removed doc
        e.u32(5); // doc 5
        let bytes = e.finish();
        let err = Bm25Index::decode(&mut Decoder::new(&bytes)).err();
        assert_eq!(
            err,
            Some(SnapshotError::Invalid {
                at: 4,
                what: SnapshotProblem::RemovedUnknown { doc: 5, docs: 1 },
            })
        );
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("snapshot invalid at byte 4: removed doc 5 unknown")
        );
    }

    /// `search_top` equals `search_all` truncated, bit for bit, on random
    /// corpora with removed documents.
    #[test]
    fn top_k_equals_the_full_ranking_truncated() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..30 {
            let mut idx = Bm25Index::new();
            let docs = 50 + rand(200);
            for _ in 0..docs {
                let len = 1 + rand(12);
                let words: Vec<String> = (0..len)
                    .map(|_| format!("word:w{}", rand(25) * rand(4)))
                    .collect();
                idx.add(&words);
            }
            if round % 3 == 0 {
                for _ in 0..rand(20) {
                    idx.remove(u32::try_from(rand(docs)).unwrap_or(0));
                }
            }
            for _ in 0..10 {
                let q: Vec<String> = (0..1 + rand(4))
                    .map(|_| format!("word:w{}", rand(30)))
                    .collect();
                for k in [1, 3, 6, 50] {
                    let mut full = idx.search_all(&q);
                    full.truncate(k);
                    assert_eq!(
                        idx.search_top(&q, k),
                        full,
                        "round {round}, query {q:?}, k {k}"
                    );
                }
            }
        }
    }

    fn doc(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| format!("word:{w}")).collect()
    }

    /// d0 = [a a b] (len 3), d1 = [b c] (len 2), d2 = [c c c d] (len 4).
    fn corpus() -> Bm25Index {
        let mut idx = Bm25Index::new();
        assert_eq!(idx.add(&doc(&["a", "a", "b"])), 0);
        assert_eq!(idx.add(&doc(&["b", "c"])), 1);
        assert_eq!(idx.add(&doc(&["c", "c", "c", "d"])), 2);
        idx
    }

    #[test]
    fn hand_computed_scores() {
        let idx = corpus();
        // N = 3, avgdl = 3.
        // Query "a": df = 1, idf = ln(1 + 2.5/1.5) = ln(8/3).
        //   d0: tf 2, |d| 3: 2·2.2 / (2 + 1.2·(0.25 + 0.75)) = 4.4/3.2 = 1.375
        let r = idx.search_all(&doc(&["a"]));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, 0);
        let expected = (8.0f64 / 3.0).ln() * 1.375;
        assert!((r[0].1 - expected).abs() < 1e-9);
        assert!((r[0].1 - 1.348_640_222_891_123_4).abs() < 1e-9);

        // Query "b c" (+ duplicate b): df(b) = 2, df(c) = 2, idf = ln(1 + 1.5/2.5) = ln(1.6).
        //   d0: b tf1 |d|3: 2.2/(1 + 1.2) = 1
        //   d1: b tf1 |d|2: 2.2/(1 + 1.2·(0.25 + 0.5)) = 2.2/1.9; c same
        //   d2: c tf3 |d|4: 6.6/(3 + 1.2·(0.25 + 1)) = 6.6/4.5
        let r = idx.search_all(&doc(&["b", "c", "b"]));
        let idf = 1.6f64.ln();
        let d1 = idf * (2.2 / 1.9) + idf * (2.2 / 1.9);
        let d2 = idf * (6.6 / 4.5);
        let d0 = idf;
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2, 0]);
        assert!((r[0].1 - d1).abs() < 1e-9);
        assert!((r[1].1 - d2).abs() < 1e-9);
        assert!((r[2].1 - d0).abs() < 1e-9);
        assert!((r[0].1 - 1.088_429_457_200_651).abs() < 1e-9);
        assert!((r[1].1 - 0.689_338_656_227_078_9).abs() < 1e-9);
        assert!((r[2].1 - 0.470_003_629_245_735_63).abs() < 1e-9);

        // Unknown terms and empty queries give nothing.
        assert!(idx.search_all(&doc(&["zzz"])).is_empty());
        assert!(idx.search_all(&[]).is_empty());
        assert!(Bm25Index::new().search_all(&doc(&["a"])).is_empty());
    }

    #[test]
    fn filter_recomputes_stats() {
        let idx = corpus();
        // Candidates {d1, d2}: N = 2, avgdl = 3, df(c) = 2 → idf = ln(1 + 0.5/2.5) = ln(1.2).
        let r = idx.search(&doc(&["c"]), &|d| d != 0);
        let idf = 1.2f64.ln();
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2, 1]);
        assert!((r[0].1 - idf * (6.6 / 4.5)).abs() < 1e-9);
        assert!((r[1].1 - idf * (2.2 / 1.9)).abs() < 1e-9);
        // Candidates {d0, d1}: N = 2, avgdl = 2.5, df(c) = 1 → idf = ln(1 + 1.5/1.5) = ln 2.
        //   d1: 2.2 / (1 + 1.2·(0.25 + 0.75·2/2.5)) = 2.2 / 2.02
        let r = idx.search(&doc(&["c"]), &|d| d != 2);
        assert_eq!(r.len(), 1);
        assert!((r[0].1 - 2.0f64.ln() * (2.2 / 2.02)).abs() < 1e-9);
        // Accept-all filter equals the fast path.
        let q = doc(&["a", "b", "c", "d"]);
        assert_eq!(idx.search(&q, &|_| true), idx.search_all(&q));
        assert!(idx.search(&q, &|_| false).is_empty());
    }

    #[test]
    fn remove_excludes_from_stats() {
        let mut idx = corpus();
        idx.remove(0);
        idx.remove(0);
        idx.remove(99);
        assert_eq!(idx.len(), 2);
        assert!(!idx.contains(0));
        let q = doc(&["b", "c"]);
        assert_eq!(idx.search_all(&q), idx.search(&q, &|d| d != 0));
        let mut fresh = Bm25Index::new();
        fresh.add(&doc(&["b", "c"]));
        fresh.add(&doc(&["c", "c", "c", "d"]));
        let a: Vec<f64> = idx.search_all(&q).iter().map(|x| x.1).collect();
        let b: Vec<f64> = fresh.search_all(&q).iter().map(|x| x.1).collect();
        assert_eq!(a, b);
        idx.compact();
        assert_eq!(
            idx.search_all(&q).iter().map(|x| x.1).collect::<Vec<_>>(),
            b
        );
        assert!(idx.search_all(&doc(&["a"])).is_empty());
        // New docs keep increasing numbers.
        assert_eq!(idx.add(&doc(&["a"])), 3);
    }

    #[test]
    fn empty_docs_count_in_stats() {
        let mut idx = Bm25Index::new();
        idx.add(&doc(&["x"]));
        idx.add(&[]);
        // N = 2, avgdl = 0.5, df = 1: idf = ln 2; tf 1, |d| 1:
        // 2.2 / (1 + 1.2·(0.25 + 1.5)) = 2.2/3.1
        let r = idx.search_all(&doc(&["x"]));
        assert!((r[0].1 - 2.0f64.ln() * (2.2 / 3.1)).abs() < 1e-9);
        // All docs empty: avgdl 0 → 1, nothing matches.
        let mut idx = Bm25Index::new();
        idx.add(&[]);
        assert!(idx.search_all(&doc(&["x"])).is_empty());
    }

    #[test]
    fn ties_by_doc_and_determinism() {
        let mut idx = Bm25Index::new();
        for _ in 0..5 {
            idx.add(&doc(&["same", "text"]));
        }
        let r = idx.search_all(&doc(&["same"]));
        assert_eq!(
            r.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4]
        );
        assert_eq!(r, idx.search_all(&doc(&["same"])));
    }

    #[test]
    fn auto_compaction_keeps_results() {
        let mut idx = Bm25Index::new();
        for i in 0..3000u32 {
            idx.add(&doc(&["t", if i % 2 == 0 { "even" } else { "odd" }]));
        }
        for d in 0..2500u32 {
            idx.remove(d);
        }
        assert_eq!(idx.len(), 500);
        let r = idx.search_all(&doc(&["even"]));
        assert_eq!(r.len(), 250);
        assert!(r.iter().all(|(d, _)| *d >= 2500 && d % 2 == 0));
        assert_eq!(r, idx.search(&doc(&["even"]), &|_| true));
    }

    /// Scale check (run with `--release --ignored`): 1M docs of 12 tokens
    /// over a 50k-term vocabulary.
    #[test]
    #[ignore = "slow; scale check"]
    fn one_million_docs() {
        let mut idx = Bm25Index::new();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let start = std::time::Instant::now();
        let mut docs = Vec::with_capacity(1_000_000);
        for _ in 0..1_000_000u32 {
            let d: Vec<String> = (0..12)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    format!("word:t{}", seed % 50_000)
                })
                .collect();
            docs.push(d);
        }
        let generated = start.elapsed();
        let start = std::time::Instant::now();
        for d in &docs {
            idx.add(d);
        }
        let built = start.elapsed();
        let q = doc(&["t1", "t42", "t777", "t31337"]);
        let start = std::time::Instant::now();
        let r = idx.search_all(&q);
        let all = start.elapsed();
        let start = std::time::Instant::now();
        let f = idx.search(&q, &|d| d % 2 == 0);
        let filtered = start.elapsed();
        eprintln!(
            "generate {generated:?}, build {built:?}, search_all {all:?} ({} hits), search {filtered:?} ({} hits)",
            r.len(),
            f.len()
        );
        assert!(!r.is_empty() && !f.is_empty());
    }
}
