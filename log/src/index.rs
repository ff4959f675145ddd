//! The index stage: the secondary indexes (`ids`, `kinds`, `threads`,
//! `children`, `external`, `model_calls`) are views over the records
//! keyspace, written apart from the records' commit batch.
//!
//! The writer keeps the entries of the records past the **index
//! watermark** (the last sequence whose entries are stored, `meta` key
//! `index/watermark`) in memory: the **unindexed tail**. It is exact, not a
//! cache: `id → seq`, `external key → (id, seq)` and `request hash → seq`
//! and `parent → children` answer point reads and children lookups for
//! those records; the per-kind and per-thread entries wait there until the
//! next flush. A flush writes every entry of the tail, keys sorted, then
//! the new watermark: in one batch, or for a large tail by fjall's bulk
//! ingestion followed by the watermark's batch (the watermark never runs
//! ahead of its entries; a crash in between re-indexes the same entries),
//! so the stored indexes always equal a rebuild of the records
//! `1..=watermark`.
//!
//! A flush runs when the tail passes [`FLUSH_RECORDS`] records or
//! [`FLUSH_BYTES`] bytes, before any read that scans the kind or id index
//! (by kind, by id prefix), and when the store is dropped. While an
//! [`crate::IndexStage`] runs (a backfill), the writer freezes a full tail
//! for the stage's thread and appends into a new one (`Unindexed`). Opening
//! a directory indexes the records past the watermark (read back from the
//! records keyspace) before anything is served, so a crash between a
//! commit and its flush loses nothing.

use foldhash::HashMap;

use crate::id::{Digest, RecordId};
use crate::keys;
use crate::record::{Record, RecordKind};

/// Records in the tail that make the writer flush it. Each flush of a
/// backfill ingests one sorted table per index keyspace whose keys overlap
/// all of level 1, so fewer, larger tables mean fewer merges that rewrite
/// level 1. `ingest` of 5M generated messages (one run each): 235.4 s
/// with 65,536 records and 16 level-0 tables per merge, 201.7 s with
/// 65,536 and 64, 184.3 s with 131,072 and 32 (this setting), 176.6 and
/// 183.0 s with 262,144 and 16, 173.7 s with 524,288 and 16. A tail's
/// memory grows with it, two tails during a backfill: the 1 GB ChatGPT
/// import peaked at 234,092 KiB with 131,072 and 293,612 KiB with 262,144
/// (over issue 19's 300 MB in a bad run).
pub const FLUSH_RECORDS: usize = 128 * 1024;

/// Approximate bytes of index entries in the tail that make the writer
/// flush it (a cap for records with long keys: most records of a backfill
/// hold about 300 bytes of entries, so [`FLUSH_RECORDS`] comes first).
pub const FLUSH_BYTES: usize = 128 << 20;

/// One child link waiting in the tail: `(seq, kind, id)` of the child.
pub(crate) type Link = (u64, RecordKind, RecordId);

/// Receives index entries: `(keyspace, key, value)`.
pub(crate) type Put<'a, E> = dyn FnMut(usize, &[u8], &[u8]) -> Result<(), E> + 'a;

/// Receives the `(key, value)` entries of one index keyspace.
pub(crate) type PutIn<'a, E> = dyn FnMut(&[u8], &[u8]) -> Result<(), E> + 'a;

/// A threaded record's keys: its thread prefix
/// ([`keys::thread_prefix`]) and, for a message, its external key
/// ([`keys::external_key`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ThreadKeys {
    pub(crate) prefix: Vec<u8>,
    pub(crate) external: Option<Vec<u8>>,
}

impl ThreadKeys {
    /// The keys of `record`, `None` for a record of no thread.
    pub(crate) fn of(record: &Record) -> Option<Self> {
        let thread = record.thread()?;
        let prefix = keys::thread_prefix(record.tenant(), thread);
        let external = match record {
            Record::Message(m) => Some(keys::external_key(&prefix, &m.external_id)),
            _ => None,
        };
        Some(Self { prefix, external })
    }
}

/// The index entries of the records past the watermark.
#[derive(Default)]
pub(crate) struct IndexTail {
    /// Last sequence indexed in the keyspaces (the watermark).
    pub(crate) watermark: u64,
    /// Last sequence in the tail (the watermark when it is empty).
    last: u64,
    /// Records in the tail.
    pub(crate) records: usize,
    /// Approximate bytes of the entries.
    pub(crate) bytes: usize,
    /// `id → seq`.
    pub(crate) ids: HashMap<RecordId, u64>,
    /// `external key → (message id, seq)`.
    pub(crate) external: HashMap<Vec<u8>, (RecordId, u64)>,
    /// `request hash → seq` of the first model call with the hash, for the
    /// hashes the stored index does not hold.
    pub(crate) model_calls: HashMap<Digest, u64>,
    /// `(kind, seq, id)`.
    kinds: Vec<(RecordKind, u64, RecordId)>,
    /// `thread prefix → [(seq, kind, id)]`, in log order (a thread's
    /// unindexed records are read from here without a flush).
    threads: HashMap<Vec<u8>, Vec<Link>>,
    /// `parent → [(seq, kind, id)]`, in log order.
    pub(crate) children: HashMap<RecordId, Vec<Link>>,
}

impl IndexTail {
    /// An empty tail after `watermark`.
    pub(crate) fn after(watermark: u64) -> Self {
        Self {
            watermark,
            last: watermark,
            ..Self::default()
        }
    }

    /// Whether no record waits to be indexed.
    pub(crate) fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Whether the tail is large enough to flush.
    pub(crate) fn is_full(&self, max_records: usize) -> bool {
        self.records >= max_records || self.bytes >= FLUSH_BYTES
    }

    /// Takes in the entries of one record at `seq` (after every record
    /// already in the tail). `first_call` says that
    /// a model call is the first with its request hash (the caller checked
    /// the stored index and the tail).
    pub(crate) fn add(&mut self, seq: u64, id: RecordId, record: &Record, first_call: bool) {
        let keys = ThreadKeys::of(record);
        self.add_keyed(seq, id, record, first_call, keys);
    }

    /// [`IndexTail::add`] with the record's [`ThreadKeys`] computed by the
    /// caller (the writer computes them once for its checks and the index).
    pub(crate) fn add_keyed(
        &mut self,
        seq: u64,
        id: RecordId,
        record: &Record,
        first_call: bool,
        keys: Option<ThreadKeys>,
    ) {
        let kind = record.kind();
        self.records += 1;
        self.last = self.last.max(seq);
        self.ids.insert(id, seq);
        self.kinds.push((kind, seq, id));
        self.bytes += 32 + 8 + 9 + 32;
        if kind.indexed_as_child() {
            let mut parents = record.parents();
            parents.sort_unstable();
            parents.dedup();
            for parent in parents {
                self.children
                    .entry(parent)
                    .or_default()
                    .push((seq, kind, id));
                self.bytes += 40 + 33;
            }
        }
        if let Some(ThreadKeys { prefix, external }) = keys {
            if let Some(key) = external {
                self.bytes += key.len() + 32;
                self.external.insert(key, (id, seq));
            }
            self.bytes += prefix.len() + 8 + 33;
            // The thread's key is kept once, by its first entry.
            match self.threads.get_mut(prefix.as_slice()) {
                Some(links) => links.push((seq, kind, id)),
                None => {
                    self.threads.insert(prefix, vec![(seq, kind, id)]);
                }
            }
        }
        if let Record::ModelCall(call) = record
            && first_call
        {
            self.model_calls.insert(call.request_hash, seq);
            self.bytes += 32 + 8;
        }
    }

    /// Moves the entries of `other` (later records) into this tail.
    pub(crate) fn absorb(&mut self, other: Self) {
        self.records += other.records;
        self.last = self.last.max(other.last);
        self.bytes += other.bytes;
        self.ids.extend(other.ids);
        self.external.extend(other.external);
        self.model_calls.extend(other.model_calls);
        self.kinds.extend(other.kinds);
        merge_links(&mut self.threads, other.threads);
        merge_links(&mut self.children, other.children);
    }

    /// Drops the entries of the records from `seq` on (a commit that
    /// failed).
    pub(crate) fn forget_from(&mut self, seq: u64) {
        let before = self.kinds.len();
        self.ids.retain(|_, s| *s < seq);
        self.external.retain(|_, (_, s)| *s < seq);
        self.model_calls.retain(|_, s| *s < seq);
        self.kinds.retain(|e| e.1 < seq);
        cut_links(&mut self.threads, seq);
        cut_links(&mut self.children, seq);
        self.records -= before - self.kinds.len();
        self.last = self.last.min(seq.saturating_sub(1)).max(self.watermark);
    }

    /// The entries of the thread `prefix` in the tail from sequence `from`
    /// on, in log order.
    pub(crate) fn thread_links(&self, prefix: &[u8], from: u64) -> Vec<Link> {
        self.threads.get(prefix).map_or_else(Vec::new, |links| {
            links.iter().filter(|l| l.0 >= from).copied().collect()
        })
    }

    /// The last sequence in the tail (the watermark once flushed).
    pub(crate) fn last_seq(&self) -> u64 {
        self.last
    }

    /// Hands every entry to `put` as `(keyspace, key, value)`, keyspace by
    /// keyspace in [`INDEX_KEYSPACES`] order and keys ascending within each
    /// (what `start_ingestion` requires), and returns the new watermark.
    /// Nothing is changed (point reads use the entries until they are
    /// committed, and a failed commit leaves the tail whole): the entries
    /// are sorted in lists of references.
    pub(crate) fn for_each_sorted<E>(&self, put: &mut Put<'_, E>) -> Result<u64, E> {
        for ks in 0..INDEX_KEYSPACES.len() {
            self.for_each_sorted_in(ks, &mut |key, value| put(ks, key, value))?;
        }
        Ok(self.last_seq())
    }

    /// The entries of index keyspace `ks` (its place in
    /// [`INDEX_KEYSPACES`]), keys ascending, to `put` as `(key, value)`;
    /// none for a place past the last. Keyspaces are independent: each may
    /// be handed over on a thread of its own.
    pub(crate) fn for_each_sorted_in<E>(&self, ks: usize, put: &mut PutIn<'_, E>) -> Result<(), E> {
        match ks {
            0 => {
                let mut ids: Vec<(&RecordId, &u64)> = self.ids.iter().collect();
                ids.sort_unstable();
                for (id, seq) in ids {
                    put(id.as_bytes(), &keys::seq_key(*seq))?;
                }
            }
            1 => {
                let mut kinds: Vec<&(RecordKind, u64, RecordId)> = self.kinds.iter().collect();
                kinds.sort_unstable_by_key(|e| (e.0.code(), e.1));
                for &&(kind, seq, id) in &kinds {
                    put(&keys::kind_key(kind, seq), id.as_bytes())?;
                }
            }
            2 => put_links(&self.threads, &mut |prefix, (seq, kind, id)| {
                put(
                    &keys::thread_seq_key(prefix, seq),
                    &keys::thread_value(kind, &id),
                )
            })?,
            3 => put_links(&self.children, &mut |parent, (seq, kind, id)| {
                put(
                    &keys::child_key(parent, seq),
                    &keys::thread_value(kind, &id),
                )
            })?,
            4 => {
                let mut external: Vec<(&Vec<u8>, &(RecordId, u64))> =
                    self.external.iter().collect();
                external.sort_unstable();
                for (key, (id, _)) in external {
                    put(key, id.as_bytes())?;
                }
            }
            5 => {
                let mut calls: Vec<(&Digest, &u64)> = self.model_calls.iter().collect();
                calls.sort_unstable_by_key(|e| *e.0.as_bytes());
                for (hash, seq) in calls {
                    put(hash.as_bytes(), &keys::seq_key(*seq))?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The entries of every record past the stored watermark: a tail handed to
/// a flush (frozen, read until the flush's watermark is committed) and the
/// tail the writer adds to (active, the records after the frozen ones).
/// With the index stage on a thread of its own, the writer freezes a full
/// tail and goes on appending while the stage writes it.
pub(crate) struct Unindexed {
    /// The stored watermark: entries up to it are in the index keyspaces.
    pub(crate) watermark: u64,
    /// The records `watermark + 1 ..= frozen.last_seq()`, being flushed.
    pub(crate) frozen: Option<std::sync::Arc<IndexTail>>,
    /// The records after the frozen ones.
    pub(crate) active: IndexTail,
}

impl Unindexed {
    /// Nothing unindexed after `watermark`.
    pub(crate) fn after(watermark: u64) -> Self {
        Self {
            watermark,
            frozen: None,
            active: IndexTail::after(watermark),
        }
    }

    /// Whether every record is indexed.
    pub(crate) fn is_empty(&self) -> bool {
        self.frozen.is_none() && self.active.is_empty()
    }

    /// The frozen tail, then the active one (log order).
    fn tails(&self) -> impl Iterator<Item = &IndexTail> {
        self.frozen
            .as_deref()
            .into_iter()
            .chain(std::iter::once(&self.active))
    }

    /// `id → seq` of an unindexed record.
    pub(crate) fn seq_of(&self, id: &RecordId) -> Option<u64> {
        self.tails().find_map(|t| t.ids.get(id).copied())
    }

    /// `external key → (id, seq)` of an unindexed message.
    pub(crate) fn external(&self, key: &[u8]) -> Option<(RecordId, u64)> {
        self.tails().find_map(|t| t.external.get(key).copied())
    }

    /// `request hash → seq` of an unindexed first model call.
    pub(crate) fn model_call(&self, hash: &Digest) -> Option<u64> {
        self.tails().find_map(|t| t.model_calls.get(hash).copied())
    }

    /// The unindexed entries of the thread `prefix` from `from` on, in log
    /// order.
    pub(crate) fn thread_links(&self, prefix: &[u8], from: u64) -> Vec<Link> {
        let mut links = Vec::new();
        for tail in self.tails() {
            links.extend(tail.thread_links(prefix, from));
        }
        links
    }

    /// The unindexed children of `parent`, in log order.
    pub(crate) fn children(&self, parent: &RecordId) -> Vec<Link> {
        let mut links = Vec::new();
        for tail in self.tails() {
            if let Some(more) = tail.children.get(parent) {
                links.extend_from_slice(more);
            }
        }
        links
    }

    /// Hands the active tail to a flush (the frozen slot must be empty)
    /// and starts a new one after it. Nothing happens to an empty tail.
    pub(crate) fn freeze(&mut self) {
        if self.active.is_empty() || self.frozen.is_some() {
            return;
        }
        let last = self.active.last_seq();
        let full = std::mem::replace(&mut self.active, IndexTail::after(last));
        self.frozen = Some(std::sync::Arc::new(full));
    }

    /// The frozen tail's entries are stored up to `watermark`, committed.
    pub(crate) fn flushed(&mut self, watermark: u64) {
        self.frozen = None;
        self.watermark = watermark;
    }
}

/// Appends the links of `later` (later records) to those of `into`, key by
/// key.
fn merge_links<K: Eq + std::hash::Hash>(
    into: &mut HashMap<K, Vec<Link>>,
    later: HashMap<K, Vec<Link>>,
) {
    for (key, mut links) in later {
        into.entry(key).or_default().append(&mut links);
    }
}

/// Drops the links at or after `seq` (and the keys left without any).
fn cut_links<K>(map: &mut HashMap<K, Vec<Link>>, seq: u64) {
    for links in map.values_mut() {
        links.retain(|e| e.0 < seq);
    }
    map.retain(|_, links| !links.is_empty());
}

/// Hands each link of `map` to `put` with its key, keys ascending and each
/// key's links in log order (ascending sequences).
fn put_links<K: Ord, E>(
    map: &HashMap<K, Vec<Link>>,
    put: &mut dyn FnMut(&K, Link) -> Result<(), E>,
) -> Result<(), E> {
    let mut sorted: Vec<(&K, &Vec<Link>)> = map.iter().collect();
    sorted.sort_unstable_by_key(|e| e.0);
    for (key, links) in sorted {
        for &link in links {
            put(key, link)?;
        }
    }
    Ok(())
}

/// An order-independent digest of a set of index entries: the entry count
/// and the wrapping sum of each entry's blake3 hash (taken as four 64-bit
/// lanes), so that the stored keyspace (read in key order) and a rebuild
/// (made in log order) can be compared without sorting either.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct IndexDigest {
    /// Entries.
    pub entries: u64,
    sum: [u64; 4],
}

impl IndexDigest {
    /// Adds one entry.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut h = blake3::Hasher::new();
        h.update(&(key.len() as u64).to_be_bytes());
        h.update(key);
        h.update(value);
        let bytes = h.finalize();
        for (lane, chunk) in self.sum.iter_mut().zip(bytes.as_bytes().chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            *lane = lane.wrapping_add(u64::from_be_bytes(word));
        }
        self.entries += 1;
    }

    /// The digest as 64 hex digits.
    pub fn to_hex(&self) -> String {
        self.sum.iter().map(|w| format!("{w:016x}")).collect()
    }
}

/// The index entries a rebuild from the records makes, one digest per
/// index keyspace (in [`INDEX_KEYSPACES`] order).
#[derive(Default)]
pub(crate) struct Rebuild {
    pub(crate) digests: [IndexDigest; 6],
    first_calls: std::collections::HashSet<Digest>,
}

/// The index keyspaces, in the order of [`Rebuild::digests`].
pub(crate) const INDEX_KEYSPACES: [&str; 6] = [
    keys::IDS,
    keys::KINDS,
    keys::THREADS,
    keys::CHILDREN,
    keys::EXTERNAL,
    keys::MODEL_CALLS,
];

impl Rebuild {
    /// Adds the entries of the record at `seq` (records in log order).
    pub(crate) fn add(&mut self, seq: u64, id: &RecordId, record: &Record) {
        let first_call = match record {
            Record::ModelCall(call) => self.first_calls.insert(call.request_hash),
            _ => false,
        };
        let mut one = IndexTail::default();
        one.add(seq, *id, record, first_call);
        let digests = &mut self.digests;
        let _ = one.for_each_sorted::<std::convert::Infallible>(&mut |ks, key, value| {
            if let Some(digest) = digests.get_mut(ks) {
                digest.add(key, value);
            }
            Ok(())
        });
    }
}
