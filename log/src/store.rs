//! The append-only log in fjall.
//!
//! One [`Store`] per data directory and process. Appends go through one writer
//! lock and commit one atomic fjall batch: the records, the thread heads and
//! the kind counters land together or not at all. The secondary indexes (id,
//! per kind, per thread, children, external id, model call) are written by
//! the index stage ([`crate::index`]): the writer keeps the entries of the
//! records past the index watermark in memory (the unindexed tail, which
//! answers point reads, children lookups and the writer's duplicate and
//! parent checks) and flushes them, keys sorted, with the new watermark in
//! one batch: when the tail is large, before a read scans the kind, thread
//! or id index, and on drop. Opening a
//! directory indexes every record past the watermark before anything is
//! served.
//!
//! Durability is chosen per append ([`Durability`]): `Sync` (the default)
//! fsyncs the journal before `append` returns, so an acknowledged append
//! survives power loss; `Buffered` hands the batch to the OS, which survives a
//! process crash but not a power loss.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use fjall::{AbstractTree, Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::envelope::{Encoded, decode, encode_with_id, id_of};
use crate::error::{Corruption, IndexEntry, StoreError, ThreadOrderProblem};
pub use crate::head::ThreadHead;
use crate::id::{Digest, RecordId};
use crate::index::{FLUSH_RECORDS, IndexTail, ThreadKeys, Unindexed};
use crate::integrity::manifest::Manifest;
use crate::integrity::{self, Damage, Inconsistency, TableCheck};
use crate::keys::{self, MAX_NAME_BYTES};
use crate::merger::IndexMerger;
use crate::recent::Recent;
use crate::record::{ModelCall, Record, RecordKind};

/// Largest chunk of a view state saved by [`Store::save_view_chunks`].
pub const VIEW_CHUNK_BYTES: usize = 4 << 20;

/// Records read under one snapshot by [`Store::scan_in_stretches`].
pub const SCAN_STRETCH: usize = 65_536;

/// Length of the head value of a chunked view state.
const CHUNK_HEAD_LEN: usize = 20;

/// First byte of the head of a segmented view state
/// ([`Store::save_view_segment`]).
const SEGMENTS_HEAD_TAG: u8 = b'S';
/// Length of the head of a segmented view state.
const SEGMENTS_HEAD_LEN: usize = 1 + CHUNK_HEAD_LEN;

/// The fields of a view head, `[u64 BE][u32 BE][u64 BE]` (a chunk head:
/// last sequence, chunks, total length; after a segments head's tag: last
/// sequence, segments, records of the last segment), or `None` when
/// `bytes` is not exactly [`CHUNK_HEAD_LEN`] long.
fn head_fields(bytes: &[u8]) -> Option<(u64, u32, u64)> {
    let b = <&[u8; CHUNK_HEAD_LEN]>::try_from(bytes).ok()?;
    let (seq, rest) = b.split_first_chunk::<8>()?;
    let (count, rest) = rest.split_first_chunk::<4>()?;
    let (last, _) = rest.split_first_chunk::<8>()?;
    Some((
        u64::from_be_bytes(*seq),
        u32::from_be_bytes(*count),
        u64::from_be_bytes(*last),
    ))
}

/// The name under which segment `index` of the segmented view state `view`
/// is stored as a chunked state: `view#index` (zero-padded to six digits).
pub fn segment_name(view: &str, index: u32) -> String {
    format!("{view}#{index:06}")
}

/// How durable an acknowledged append is.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Durability {
    /// fsync (`SyncAll`) before `append` returns: survives power loss.
    #[default]
    Sync,
    /// Write to OS buffers only: survives a process crash, not a power loss.
    Buffered,
}

/// What happened to one record of an append.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Appended {
    /// The record's id.
    pub id: RecordId,
    /// Its sequence number (the existing one when it was already stored).
    pub seq: u64,
    /// True when this append wrote it; false when it was already in the log.
    pub new: bool,
}

/// Result of an append, one entry per input record, in input order.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct AppendReceipt {
    /// Per record.
    pub records: Vec<Appended>,
}

impl AppendReceipt {
    /// How many records were written.
    pub fn new_count(&self) -> usize {
        self.records.iter().filter(|a| a.new).count()
    }
}

/// A record read back with its place in the log.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct StoredRecord {
    /// Sequence number.
    pub seq: u64,
    /// Id.
    pub id: RecordId,
    /// The record.
    pub record: Record,
}

/// As `show` prints it: `{"id", "seq", "kind", "record"}`.
impl serde::Serialize for StoredRecord {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("StoredRecord", 4)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("seq", &self.seq)?;
        s.serialize_field("kind", self.record.kind().name())?;
        s.serialize_field("record", &self.record)?;
        s.end()
    }
}

/// Counts of commits by durability, for tests and `stats`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct CommitCounts {
    /// Batches committed with fsync.
    pub synced: u64,
    /// Batches committed to OS buffers only.
    pub buffered: u64,
}

/// The log of one data directory.
pub struct Store {
    path: PathBuf,
    db: Database,
    records: Keyspace,
    ids: Keyspace,
    kinds: Keyspace,
    threads: Keyspace,
    heads: Keyspace,
    external: Keyspace,
    children: Keyspace,
    views: Keyspace,
    model_calls: Keyspace,
    meta: Keyspace,
    /// Next sequence number; the lock serializes writers.
    writer: Mutex<WriterState>,
    /// The index entries of the records past the watermark. Locked after
    /// `writer` and `flush` when they are taken, and never across a commit.
    tail: Mutex<Unindexed>,
    /// Signalled when a tail is frozen for the index stage, when a frozen
    /// tail is flushed, and when the index stage starts or stops.
    tail_changed: Condvar,
    /// Serializes flushes (locked after `writer`, before `tail`).
    flush: Mutex<()>,
    /// An [`IndexStage`] is running: a full tail is frozen for it instead
    /// of being flushed by the writer.
    index_stage: std::sync::atomic::AtomicBool,
    /// Last sequence whose commit returned: a tail entry past it is visible
    /// only once its record is in the records keyspace.
    committed: AtomicU64,
    /// Records in the tail that make the writer flush it.
    flush_records: AtomicUsize,
    synced_commits: AtomicU64,
    buffered_commits: AtomicU64,
    /// Bytes written to the `views` keyspace since its memtable was last
    /// rotated ([`Store::bound_views_memtable`]).
    views_unrotated: AtomicU64,
    /// Merges the index keyspaces' level 0 off fjall's worker.
    merger: IndexMerger,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Block cache of the database: 32 MiB. Every block a scan reads goes
/// through it, so the view refresh after a backfill fills it with blocks
/// read once: 64 MiB put a 1 GB import's peak RSS at 293,600-296,124 KiB,
/// 32 MiB at 247,196-286,756. 16 MiB took off about 48 MB more, but random
/// reads on a large store then missed it: the catch-up derivation of a
/// 12-message ingest into that store (point reads of 555,000 messages)
/// took 526-610 s instead of 17-18 s with 32 or 64 MiB.
const CACHE_BYTES: u64 = 32 * 1024 * 1024;
/// Cap on one keyspace's memtable. fjall holds a keyspace's writes while
/// four sealed memtables wait for the flush worker, so a keyspace holds up
/// to five (a 1 GB import held 80 MB of record values in memtables at the
/// peak of its storing pass). 8 MiB did not lower that import's peak RSS
/// without derivation and raised it by about 150 MB with derivation.
const MEMTABLE_BYTES: u64 = 16 * 1024 * 1024;
/// fjall rotates a full memtable on its background worker, which is also
/// the one that compacts: during a long compaction no rotation happens and
/// the active memtable grows without bound (1.3 GB of write buffer in an
/// ingest of 2.5M messages, measured with fjall's `write_buffer_size`). So
/// the writer rotates the memtables it fills itself, after the commit that
/// fills one past [`MEMTABLE_BYTES`] of keys and values; a rotated memtable
/// waits for the flush, and fjall holds the writer while four wait, which
/// is the backpressure that bounds memory. fjall's own rotation of these
/// keyspaces is left at twice the size, as a backstop.
const WRITER_ROTATED_MEMTABLE_BYTES: u64 = 2 * MEMTABLE_BYTES;
/// Bytes of view states written before the `views` memtable is rotated by
/// the view writer itself ([`Store::bound_views_memtable`]).
const VIEWS_ROTATED_BYTES: u64 = 8 * 1024 * 1024;
/// fjall's background threads (flush and compaction). One: with two,
/// fjall 3.1's first worker hands every compaction request back to the
/// queue for the other and takes it again at once, spinning on a core for
/// as long as the other compacts (12% of all CPU at 5M messages, measured
/// with perf).
const FLUSH_WORKERS: usize = 1;
/// Cap on the journals (fjall's minimum is 64 MiB).
const JOURNAL_BYTES: u64 = 128 * 1024 * 1024;

/// The appending side of the store, behind one lock.
#[derive(Default)]
struct WriterState {
    /// Sequence number of the next record.
    next_seq: u64,
    /// Records appended lately.
    recent: Recent,
    /// Records per kind, as the `meta` counters hold them.
    counts: BTreeMap<RecordKind, u64>,
    /// Bytes of keys and values written to the `records` and `heads`
    /// keyspaces since the writer last rotated their memtables.
    unrotated: [u64; 2],
    /// Records were committed without fsync since the manifest was last
    /// written: it is brought up to date by the next synced commit, or by
    /// closing the store (which persists the journal first).
    manifest_behind: bool,
}

/// Batch-local state of an append.
#[derive(Default)]
struct Pending {
    recent: Recent,
    /// The batch's index entries (its `ids`, `external` and `model_calls`
    /// maps answer the checks of later records of the batch).
    index: IndexTail,
    messages: Vec<(RecordId, u64)>,
    /// Threads whose first message is in this batch.
    born: foldhash::HashSet<Vec<u8>>,
    heads: BTreeMap<Vec<u8>, ThreadHead>,
    counts: BTreeMap<RecordKind, u64>,
}

impl Store {
    /// Opens (or creates) the log in `path`. A second process gets
    /// [`StoreError::InUse`] at once instead of waiting. A directory that
    /// fails the integrity checks ([`crate::integrity`]) is refused with
    /// [`StoreError::Damaged`] before anything in it is changed.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_checked(path, TableCheck::Changed)
    }

    /// Opens an existing log only: a directory holding no store is
    /// [`StoreError::NotAStore`] and nothing is created in it.
    pub fn open_existing(path: impl AsRef<Path>, tables: TableCheck) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if !integrity::looks_like_store(path) {
            return Err(StoreError::NotAStore {
                path: path.to_path_buf(),
                exists: path.exists(),
            });
        }
        Self::open_checked(path, tables)
    }

    /// [`Store::open`] with a choice of how many tables to hash first.
    pub fn open_checked(path: impl AsRef<Path>, tables: TableCheck) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let existed = integrity::looks_like_store(&path);
        let damaged = |damage: Damage| StoreError::Damaged {
            path: path.clone(),
            damage: Box::new(damage),
        };
        if existed {
            let _lock = lock_for_check(&path)?;
            refuse_unknown_layout(&path)?;
            integrity::check_files(&path, tables).map_err(damaged)?;
        }
        let store = Self::open_engine(path, existed)?;
        let last = store.last_seq()?.unwrap_or(0);
        let mut counts = BTreeMap::new();
        for kind in RecordKind::ALL {
            counts.insert(kind, store.count(kind)?);
        }
        store.check_log(last, &counts)?;
        store.catch_up_on_open(last)?;
        store.check_last_indexed(last)?;
        let mut writer = store.lock_writer();
        writer.next_seq = last + 1;
        writer.counts = counts;
        drop(writer);
        // A level 0 left full (a process stopped before its merge) is
        // merged now, not at the next flush: a store only read has none.
        store.merger.request().map_err(|e| store.storage(e))?;
        Ok(store)
    }

    /// Opens an existing directory for `audit --deep`: journals must be
    /// intact (fjall's recovery would truncate a damaged one), every table
    /// is hashed, and a damaged table does not stop the open — it is
    /// returned beside the store so that the audit can name the records it
    /// makes unreadable. The log checks of an ordinary open are skipped:
    /// the audit reports what they would.
    pub fn open_for_deep_audit(
        path: impl AsRef<Path>,
    ) -> Result<(Self, Option<Damage>), StoreError> {
        let path = path.as_ref().to_path_buf();
        if !integrity::looks_like_store(&path) {
            let exists = path.exists();
            return Err(StoreError::NotAStore { path, exists });
        }
        let damaged = |damage: Damage| StoreError::Damaged {
            path: path.clone(),
            damage: Box::new(damage),
        };
        let table_damage = {
            let _lock = lock_for_check(&path)?;
            refuse_unknown_layout(&path)?;
            integrity::check_journals(&path).map_err(damaged)?;
            integrity::check_tables(&path, TableCheck::All).err()
        };
        let store = Self::open_engine(path, true)?;
        let last = store.last_seq()?.unwrap_or(0);
        // The audit compares the indexes with a rebuild: they are caught up
        // first unless a table is damaged (then the audit names the
        // unreadable records instead).
        if table_damage.is_none() {
            store.catch_up_on_open(last)?;
        } else {
            let watermark = store.stored_watermark(last).unwrap_or(last);
            *store.lock_tail() = Unindexed::after(watermark);
        }
        let mut writer = store.lock_writer();
        writer.next_seq = last + 1;
        drop(writer);
        Ok((store, table_damage))
    }

    /// Opens fjall's database and keyspaces with no integrity check
    /// (`existed`: errors are damage, not a failure to create).
    pub(crate) fn open_engine(path: PathBuf, existed: bool) -> Result<Self, StoreError> {
        let damaged = |damage: Damage| StoreError::Damaged {
            path: path.clone(),
            damage: Box::new(damage),
        };
        let storage = |source: fjall::Error| match source {
            fjall::Error::Locked => StoreError::InUse { path: path.clone() },
            source if existed => damaged(Damage::Engine(source.to_string())),
            source => StoreError::Storage {
                path: path.clone(),
                source,
            },
        };
        // Memory is bounded whatever the size of the log: each keyspace's
        // memtable, the block cache and the journals have a cap (fjall's
        // defaults, 64 MiB per keyspace and 512 MiB of journals, let nine
        // keyspaces hold over half a GiB in memtables).
        let db = Database::builder(&path)
            .cache_size(CACHE_BYTES)
            .max_journaling_size(JOURNAL_BYTES)
            .worker_threads(FLUSH_WORKERS)
            .open()
            .map_err(storage)?;
        let ks = |name: &str| {
            let memtable = if name == keys::RECORDS || name == keys::HEADS {
                WRITER_ROTATED_MEMTABLE_BYTES
            } else {
                MEMTABLE_BYTES
            };
            let index = crate::index::INDEX_KEYSPACES.contains(&name);
            db.keyspace(name, || {
                let options = KeyspaceCreateOptions::default().max_memtable_size(memtable);
                if index {
                    options.compaction_strategy(std::sync::Arc::new(
                        fjall::compaction::Leveled::default()
                            .with_l0_threshold(crate::merger::FJALL_L0_BACKSTOP),
                    ))
                } else {
                    options
                }
            })
            .map_err(storage)
        };
        let (ids, kinds, threads, external, children, model_calls) = (
            ks(keys::IDS)?,
            ks(keys::KINDS)?,
            ks(keys::THREADS)?,
            ks(keys::EXTERNAL)?,
            ks(keys::CHILDREN)?,
            ks(keys::MODEL_CALLS)?,
        );
        Ok(Self {
            records: ks(keys::RECORDS)?,
            // In [`Store::index_keyspaces`] order.
            merger: IndexMerger::new([
                ids.clone(),
                kinds.clone(),
                threads.clone(),
                children.clone(),
                external.clone(),
                model_calls.clone(),
            ]),
            ids,
            kinds,
            threads,
            heads: ks(keys::HEADS)?,
            external,
            children,
            views: ks(keys::VIEWS)?,
            model_calls,
            meta: ks(keys::META)?,
            writer: Mutex::new(WriterState::default()),
            tail: Mutex::new(Unindexed::after(0)),
            tail_changed: Condvar::new(),
            flush: Mutex::new(()),
            index_stage: std::sync::atomic::AtomicBool::new(false),
            committed: AtomicU64::new(0),
            flush_records: AtomicUsize::new(initial_flush_records()),
            synced_commits: AtomicU64::new(0),
            views_unrotated: AtomicU64::new(0),
            buffered_commits: AtomicU64::new(0),
            db,
            path,
        })
    }

    /// fjall's internal id of the records and meta keyspaces.
    pub(crate) fn engine_ids(&self) -> (u64, u64, u64) {
        (self.records.id(), self.kinds.id(), self.meta.id())
    }

    /// The checks made once fjall has opened the directory: the records
    /// keyspace, the kind counters, the last record's index entries and
    /// the manifest agree. Brings a lagging manifest up to date.
    fn check_log(&self, last: u64, counts: &BTreeMap<RecordKind, u64>) -> Result<(), StoreError> {
        let damaged = |damage: Damage| StoreError::Damaged {
            path: self.path.clone(),
            damage: Box::new(damage),
        };
        let manifest = Manifest::load(&self.path).map_err(|e| damaged(Damage::Manifest(e)))?;
        if let Some(m) = &manifest
            && last < m.last_seq
        {
            return Err(damaged(Damage::MissingRecords {
                found: last,
                expected: m.last_seq,
            }));
        }
        if last > 0 {
            let first = match self.records.first_key_value() {
                Some(guard) => {
                    let key = guard.key().map_err(|e| self.storage(e))?;
                    keys::decode_seq(&key).ok_or_else(|| StoreError::Corrupt {
                        keyspace: keys::RECORDS,
                        detail: Corruption::FirstKey { key: key.to_vec() },
                    })?
                }
                None => 0,
            };
            if first != 1 {
                return Err(damaged(Damage::MissingHead { first }));
            }
            let total: u64 = counts.values().sum();
            if total != last {
                return Err(damaged(Damage::Inconsistent(Inconsistency::KindCounters {
                    total,
                    last,
                })));
            }
            if self.raw_value(last)?.is_none() {
                return Err(damaged(Damage::Inconsistent(
                    Inconsistency::LastRecordMissing { seq: last },
                )));
            }
        }
        if last > 0 && manifest.as_ref().is_none_or(|m| m.last_seq != last) {
            self.save_manifest(last, counts);
        }
        Ok(())
    }

    /// The check made once the indexes are caught up: the last record's id
    /// and kind entries hold.
    fn check_last_indexed(&self, last: u64) -> Result<(), StoreError> {
        let damaged = |damage: Damage| StoreError::Damaged {
            path: self.path.clone(),
            damage: Box::new(damage),
        };
        if last > 0 {
            let Some(bytes) = self.raw_value(last)? else {
                return Err(damaged(Damage::Inconsistent(
                    Inconsistency::LastRecordMissing { seq: last },
                )));
            };
            let id = id_of(&bytes);
            if self.seq_of(&id)? != Some(last) {
                return Err(damaged(Damage::Inconsistent(Inconsistency::IdIndex {
                    id,
                    seq: last,
                })));
            }
            let kind = decode(&bytes)
                .map_err(|source| StoreError::Decode { seq: last, source })?
                .kind();
            if self.indexed_id(kind, last)? != Some(id) {
                return Err(damaged(Damage::Inconsistent(Inconsistency::KindIndex {
                    kind: kind.name(),
                    id,
                    seq: last,
                })));
            }
        }
        Ok(())
    }

    /// The index watermark as stored. A directory without one was written
    /// before the index stage (its indexes were in the records' batches):
    /// when the id index holds its last record, every record is indexed;
    /// otherwise nothing is taken for indexed.
    fn stored_watermark(&self, last: u64) -> Result<u64, StoreError> {
        match self
            .meta
            .get(keys::WATERMARK_KEY)
            .map_err(|e| self.storage(e))?
        {
            Some(v) => keys::decode_seq(&v).ok_or_else(|| StoreError::Corrupt {
                keyspace: keys::META,
                detail: Corruption::Watermark { len: v.len() },
            }),
            None if last == 0 => Ok(0),
            None => {
                let indexed = match self.raw_value(last)? {
                    Some(bytes) => {
                        self.ids
                            .get(id_of(&bytes).as_bytes())
                            .map_err(|e| self.storage(e))?
                            .and_then(|v| keys::decode_seq(&v))
                            == Some(last)
                    }
                    None => false,
                };
                Ok(if indexed { last } else { 0 })
            }
        }
    }

    /// Indexes every record past the stored watermark (read back from the
    /// records keyspace), flushing as the tail fills, before anything is
    /// served. A watermark past the last record is damage (records lost
    /// under their index entries).
    fn catch_up_on_open(&self, last: u64) -> Result<(), StoreError> {
        let watermark = self.stored_watermark(last)?;
        if watermark > last {
            return Err(StoreError::Damaged {
                path: self.path.clone(),
                damage: Box::new(Damage::Inconsistent(Inconsistency::IndexAhead {
                    watermark,
                    last,
                })),
            });
        }
        let _writer = self.lock_writer();
        self.committed.store(last, Ordering::Release);
        *self.lock_tail() = Unindexed::after(watermark);
        let limit = self.flush_records.load(Ordering::Relaxed);
        for item in self.scan_raw(watermark + 1) {
            let (seq, bytes) = item?;
            let record = decode(&bytes).map_err(|source| StoreError::Decode { seq, source })?;
            let first_call = match &record {
                Record::ModelCall(call) => self.model_call_seq(&call.request_hash)?.is_none(),
                _ => false,
            };
            let full = {
                let mut tail = self.lock_tail();
                tail.active.add(seq, id_of(&bytes), &record, first_call);
                tail.active.is_full(limit)
            };
            if full {
                self.flush_tail()?;
            }
        }
        self.flush_tail()
    }

    fn lock_tail(&self) -> std::sync::MutexGuard<'_, Unindexed> {
        // Every change of the tail is complete before the lock is released.
        self.tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_flush(&self) -> std::sync::MutexGuard<'_, ()> {
        // Guards no data: a flush that panicked left the tail whole.
        self.flush
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Flushes every unindexed entry: a frozen tail the index stage has not
    /// written yet (or waits for the one it is writing), then the active
    /// one. The caller holds the writer lock (no record joins the tail
    /// meanwhile); point reads keep answering from the tail until each
    /// watermark is committed.
    fn flush_tail(&self) -> Result<(), StoreError> {
        let _flush = self.lock_flush();
        self.write_frozen()?;
        self.lock_tail().freeze();
        self.write_frozen().map(|_| ())
    }

    /// Writes the frozen tail's entries, keys sorted, and its watermark,
    /// then drops it (the caller holds the flush lock). Large tails go
    /// through fjall's bulk ingestion (measured with the append timing of
    /// `log/tests/append.rs`, 200,000 messages: about 1.5x the batch path),
    /// then the watermark in a batch: a crash before the watermark
    /// re-indexes the same entries on open. Small ones (a catch-up before a
    /// read) go in one batch with the watermark, which makes no table per
    /// flush. Returns whether there was a frozen tail.
    fn write_frozen(&self) -> Result<bool, StoreError> {
        let Some(frozen) = self.lock_tail().frozen.clone() else {
            return Ok(false);
        };
        let index = self.index_keyspaces();
        let mut batch = self.db.batch().durability(Some(PersistMode::Buffer));
        // A keyspace whose level 0 is deep enough for fjall to slow a batch
        // is written by ingestion, which it does not slow.
        let deep = index
            .iter()
            .any(|ks| ks.tree.l0_run_count() >= crate::merger::FJALL_L0_SLOWS_WRITES);
        let watermark = if frozen.records >= INGEST_FROM_RECORDS || deep {
            crate::pause::point("index");
            self.ingest_sorted(&frozen, &index)?;
            frozen.last_seq()
        } else {
            let watermark = frozen
                .for_each_sorted::<std::convert::Infallible>(&mut |ks, key, value| {
                    if let Some(ks) = index.get(ks) {
                        batch.insert(ks, key, value);
                    }
                    Ok(())
                })
                .unwrap_or_else(|never| match never {});
            crate::pause::point("index");
            watermark
        };
        batch.insert(
            &self.meta,
            keys::WATERMARK_KEY,
            watermark.to_be_bytes().as_slice(),
        );
        batch.commit().map_err(|e| self.storage(e))?;
        self.lock_tail().flushed(watermark);
        self.tail_changed.notify_all();
        self.merger.request().map_err(|e| self.storage(e))?;
        Ok(true)
    }

    /// Writes the entries of `tail` into the index keyspaces by bulk
    /// ingestion (one per keyspace that has entries, keys ascending), the
    /// keyspaces shared out among up to one thread per core: each
    /// keyspace's table is built on its own, and nothing is visible to a
    /// read until the caller commits the watermark. A thread that cannot
    /// be started leaves its share to the others; the first error is
    /// returned once every keyspace is done.
    fn ingest_sorted(&self, tail: &IndexTail, index: &[&Keyspace; 6]) -> Result<(), StoreError> {
        let next = AtomicUsize::new(0);
        let job = || -> Result<(), StoreError> {
            let mut first_error = Ok(());
            loop {
                let ks = next.fetch_add(1, Ordering::Relaxed);
                let Some(keyspace) = index.get(ks) else {
                    return first_error;
                };
                let mut open = None;
                let written = tail.for_each_sorted_in::<StoreError>(ks, &mut |key, value| {
                    if open.is_none() {
                        open = Some(keyspace.start_ingestion().map_err(|e| self.storage(e))?);
                    }
                    if let Some(ingestion) = open.as_mut() {
                        ingestion.write(key, value).map_err(|e| self.storage(e))?;
                    }
                    Ok(())
                });
                let done = written.and_then(|()| match open {
                    Some(ingestion) => ingestion.finish().map_err(|e| self.storage(e)),
                    None => Ok(()),
                });
                first_error = first_error.and(done);
            }
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .clamp(1, index.len());
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads)
                .filter_map(|_| {
                    std::thread::Builder::new()
                        .name("strataflow-index-ingest".into())
                        .spawn_scoped(scope, job)
                        .ok()
                })
                .collect();
            let mut result = job();
            for helper in helpers {
                let theirs = helper
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                result = result.and(theirs);
            }
            result
        })
    }

    /// A full active tail, once committed: frozen for the running index
    /// stage (after the one it is writing, if any, is done), or flushed
    /// here when no stage runs. The caller holds the writer lock.
    fn hand_over_tail(&self) -> Result<(), StoreError> {
        let mut tail = self.lock_tail();
        loop {
            if !self.index_stage.load(Ordering::Acquire) {
                drop(tail);
                return self.flush_tail();
            }
            if tail.frozen.is_none() {
                tail.freeze();
                drop(tail);
                self.tail_changed.notify_all();
                return Ok(());
            }
            tail = self
                .tail_changed
                .wait(tail)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Starts the index stage on the caller's side: until the returned
    /// [`IndexStage`] is dropped, the writer hands each full tail to it
    /// instead of flushing the tail itself, and [`IndexStage::run`] (on a
    /// thread of its own) writes them. Reads that catch the indexes up
    /// still flush everything themselves.
    pub fn index_stage(&self) -> IndexStage<'_> {
        self.index_stage.store(true, Ordering::Release);
        IndexStage {
            store: self,
            stopping: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The index keyspaces in [`crate::index::INDEX_KEYSPACES`] order.
    fn index_keyspaces(&self) -> [&Keyspace; 6] {
        [
            &self.ids,
            &self.kinds,
            &self.threads,
            &self.children,
            &self.external,
            &self.model_calls,
        ]
    }

    /// Brings every index up to the last committed record (flushes the
    /// unindexed tail). Reads that scan an index call it; so does drop.
    pub fn catch_up_indexes(&self) -> Result<(), StoreError> {
        if self.lock_tail().is_empty() {
            return Ok(());
        }
        let _writer = self.lock_writer();
        self.flush_tail()
    }

    /// Catches the indexes up and returns the watermark (for `audit`).
    pub(crate) fn caught_up_watermark(&self) -> Result<u64, StoreError> {
        self.catch_up_indexes()?;
        Ok(self.index_watermark())
    }

    /// [`StoreError::Storage`] of this directory.
    pub(crate) fn storage_error(&self, source: fjall::Error) -> StoreError {
        self.storage(source)
    }

    /// The index watermark: the last sequence whose entries the index
    /// keyspaces hold (records after it are in the writer's tail).
    pub fn index_watermark(&self) -> u64 {
        self.lock_tail().watermark
    }

    /// Sets how many records the unindexed tail holds before the writer
    /// flushes it (at least 1; the default is [`FLUSH_RECORDS`]).
    pub fn set_index_flush_records(&self, records: usize) {
        self.flush_records.store(records.max(1), Ordering::Relaxed);
    }

    /// The sequence of a tail entry, if it is visible: its record's commit
    /// returned, or its record is in the records keyspace (a commit that
    /// is landing). `None` also when the tail does not have the entry.
    fn visible_in_tail(&self, seq: Option<u64>) -> Result<Option<Option<u64>>, StoreError> {
        let Some(seq) = seq else { return Ok(None) };
        if seq <= self.committed.load(Ordering::Acquire) {
            return Ok(Some(Some(seq)));
        }
        let landed = self
            .records
            .contains_key(keys::seq_key(seq))
            .map_err(|e| self.storage(e))?;
        Ok(Some(landed.then_some(seq)))
    }

    /// The tail's links (read with the tail locked) whose records are
    /// visible ([`Store::visible_in_tail`]), in their order.
    fn visible_links(
        &self,
        links: Vec<crate::index::Link>,
    ) -> Vec<Result<(u64, RecordKind, RecordId), StoreError>> {
        links
            .into_iter()
            .filter_map(|link| match self.visible_in_tail(Some(link.0)) {
                Ok(Some(Some(_))) => Some(Ok(link)),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })
            .collect()
    }

    /// fjall's keyspace ids by name.
    fn keyspace_ids(&self) -> BTreeMap<String, u64> {
        self.keyspaces()
            .into_iter()
            .map(|(name, ks)| (name.to_owned(), ks.id()))
            .collect()
    }

    /// Every keyspace with its name.
    pub(crate) fn keyspaces(&self) -> [(&'static str, &Keyspace); 10] {
        [
            (keys::RECORDS, &self.records),
            (keys::IDS, &self.ids),
            (keys::KINDS, &self.kinds),
            (keys::THREADS, &self.threads),
            (keys::HEADS, &self.heads),
            (keys::EXTERNAL, &self.external),
            (keys::CHILDREN, &self.children),
            (keys::VIEWS, &self.views),
            (keys::MODEL_CALLS, &self.model_calls),
            (keys::META, &self.meta),
        ]
    }

    /// Rewrites the manifest after a synced commit. A failure is not an
    /// error of the commit (the records are stored): the manifest then lags
    /// the log, which the next open accepts and repairs.
    fn save_manifest(&self, last: u64, counts: &BTreeMap<RecordKind, u64>) {
        let counts = counts
            .iter()
            .map(|(k, v)| (k.name().to_owned(), *v))
            .collect();
        let _ = Manifest::new(last, counts, self.keyspace_ids()).save(&self.path);
    }

    /// Brings a manifest left behind by unsynced commits up to date, once
    /// the journal is persisted (so that it still claims only durable
    /// records). A failure leaves it behind, which the next open repairs.
    fn close_manifest(&self) {
        let writer = self.lock_writer();
        if !writer.manifest_behind {
            return;
        }
        if self.db.persist(PersistMode::SyncAll).is_ok() {
            self.save_manifest(writer.next_seq.saturating_sub(1), &writer.counts);
        }
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn storage(&self, source: fjall::Error) -> StoreError {
        StoreError::Storage {
            path: self.path.clone(),
            source,
        }
    }

    fn lock_writer(&self) -> std::sync::MutexGuard<'_, WriterState> {
        // A panic while holding the lock cannot leave a half-written batch
        // (batches are atomic), so a poisoned lock is safe to reuse.
        self.writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends records in one atomic batch. Records already in the log (same
    /// id) are not written again; the receipt says which were new. Parents must
    /// be in the log or earlier in `records`. On error nothing is written.
    pub fn append(
        &self,
        records: &[Record],
        durability: Durability,
    ) -> Result<AppendReceipt, StoreError> {
        let encoded = records
            .iter()
            .map(encode_with_id)
            .collect::<Result<Vec<_>, _>>()?;
        let parts: Vec<(RecordId, &[u8], &Record)> = encoded
            .iter()
            .zip(records)
            .map(|((id, bytes), record)| (*id, bytes.as_slice(), record))
            .collect();
        self.append_parts(&parts, durability)
    }

    /// [`Store::append`] of records encoded beforehand (by the pipeline's
    /// workers), so that the single writer does not encode or hash them
    /// again.
    pub fn append_encoded<'a>(
        &self,
        records: impl IntoIterator<Item = &'a Encoded>,
        durability: Durability,
    ) -> Result<AppendReceipt, StoreError> {
        let parts: Vec<(RecordId, &[u8], &Record)> = records
            .into_iter()
            .map(|e| (e.id(), e.bytes(), e.record()))
            .collect();
        self.append_parts(&parts, durability)
    }

    /// Counts what a commit wrote to the `records` and `heads` keyspaces
    /// and rotates the memtable of each that took [`MEMTABLE_BYTES`] since
    /// its last rotation (see [`WRITER_ROTATED_MEMTABLE_BYTES`]).
    fn rotate_filled_memtables(
        &self,
        writer: &mut WriterState,
        written: [u64; 2],
    ) -> Result<(), StoreError> {
        for ((keyspace, unrotated), bytes) in [&self.records, &self.heads]
            .into_iter()
            .zip(&mut writer.unrotated)
            .zip(written)
        {
            *unrotated += bytes;
            if *unrotated >= MEMTABLE_BYTES {
                *unrotated = 0;
                keyspace.rotate_memtable().map_err(|e| self.storage(e))?;
            }
        }
        Ok(())
    }

    /// The append itself, over (id, envelope, record) triples that belong
    /// together.
    fn append_parts(
        &self,
        records: &[(RecordId, &[u8], &Record)],
        durability: Durability,
    ) -> Result<AppendReceipt, StoreError> {
        let mut writer = self.lock_writer();
        let mut seq = writer.next_seq;
        // Taken for the batch and given back after the commit (an error
        // drops it: it is only a cache).
        let mut pending = Pending {
            recent: std::mem::take(&mut writer.recent),
            ..Pending::default()
        };
        let mut batch = self.db.batch().durability(Some(match durability {
            Durability::Sync => PersistMode::SyncAll,
            Durability::Buffered => PersistMode::Buffer,
        }));
        let mut receipt = AppendReceipt {
            records: Vec::with_capacity(records.len()),
        };
        let mut records_bytes = 0u64;
        for &(id, bytes, record) in records {
            let mut parents = record.parents();
            parents.sort_unstable();
            parents.dedup();
            if let Some(thread) = record.thread() {
                check_name("tenant", record.tenant())?;
                check_name("thread", thread)?;
            }
            // Computed once for the checks, the head and the index entries.
            let thread_keys = ThreadKeys::of(record);
            let existing = match (record, &thread_keys) {
                (
                    Record::Message(m),
                    Some(ThreadKeys {
                        prefix,
                        external: Some(key),
                    }),
                ) => self.known_message(&pending, m, &id, prefix, key)?,
                // A record is appended only after its parents, so one whose
                // parent is new in this batch cannot be in the log yet.
                _ if parents.iter().any(|p| pending.index.ids.contains_key(p)) => {
                    pending.index.ids.get(&id).copied()
                }
                _ => self.seq_in(&pending, &id)?,
            };
            if let Some(existing) = existing {
                receipt.records.push(Appended {
                    id,
                    seq: existing,
                    new: false,
                });
                continue;
            }
            for parent in &parents {
                if self.seq_in(&pending, parent)?.is_none() {
                    return Err(StoreError::MissingParent {
                        kind: record.kind().name(),
                        id,
                        parent: *parent,
                    });
                }
            }
            if let Some(ThreadKeys { prefix, .. }) = &thread_keys {
                let mut head = self.head_in(&pending, prefix)?;
                if head.messages == 0 && matches!(record, Record::Message(_)) {
                    pending.born.insert(prefix.clone());
                }
                self.advance_head(&mut head, record)?;
                match pending.heads.get_mut(prefix.as_slice()) {
                    Some(h) => *h = head,
                    None => {
                        pending.heads.insert(prefix.clone(), head);
                    }
                }
            }
            batch.insert(&self.records, keys::seq_key(seq), bytes);
            records_bytes += (8 + bytes.len()) as u64;
            let first_call = match record {
                Record::ModelCall(call) => self.first_model_call(call, &pending)?,
                _ => false,
            };
            // The record's index entries (its external id among them) wait
            // in the batch's tail for the index stage.
            pending
                .index
                .add_keyed(seq, id, record, first_call, thread_keys);
            *pending.counts.entry(record.kind()).or_default() += 1;
            if record.kind() == RecordKind::Message {
                pending.messages.push((id, seq));
            }
            receipt.records.push(Appended { id, seq, new: true });
            seq += 1;
        }
        if pending.index.is_empty() {
            writer.recent = pending.recent;
            return Ok(receipt);
        }
        let mut heads_bytes = 0u64;
        for (prefix, head) in &pending.heads {
            let encoded = head.encode();
            heads_bytes += (prefix.len() + encoded.len()) as u64;
            batch.insert(&self.heads, prefix.as_slice(), encoded.as_slice());
        }
        let mut counts = writer.counts.clone();
        for (kind, added) in &pending.counts {
            let total = counts.get(kind).copied().unwrap_or(0) + added;
            counts.insert(*kind, total);
            batch.insert(
                &self.meta,
                keys::count_key(*kind),
                total.to_be_bytes().as_slice(),
            );
        }
        let born: Vec<Vec<u8>> = pending.born.iter().cloned().collect();
        // Only kept once the commit returned (an error drops it).
        pending.recent.remember(
            &pending.messages,
            &pending.heads,
            &born,
            pending.index.external.keys(),
        );
        // The entries join the tail before the commit, so that no reader
        // misses a committed record; until the commit returns a reader takes
        // them only if their record is in the records keyspace.
        let first = writer.next_seq;
        let full = {
            let mut tail = self.lock_tail();
            tail.active.absorb(std::mem::take(&mut pending.index));
            tail.active
                .is_full(self.flush_records.load(Ordering::Relaxed))
        };
        if let Err(e) = batch.commit() {
            self.lock_tail().active.forget_from(first);
            return Err(self.storage(e));
        }
        self.committed.store(seq - 1, Ordering::Release);
        match durability {
            Durability::Sync => self.synced_commits.fetch_add(1, Ordering::Relaxed),
            Durability::Buffered => self.buffered_commits.fetch_add(1, Ordering::Relaxed),
        };
        writer.next_seq = seq;
        // The manifest claims only durable records: a synced commit made
        // every earlier one durable too (fjall's journal is one sequence,
        // and rotating a journal syncs it).
        match durability {
            Durability::Sync => {
                self.save_manifest(seq - 1, &counts);
                writer.manifest_behind = false;
            }
            Durability::Buffered => writer.manifest_behind = true,
        }
        writer.counts = counts;
        writer.recent = pending.recent;
        self.rotate_filled_memtables(&mut writer, [records_bytes, heads_bytes])?;
        if full {
            self.hand_over_tail()?;
        }
        Ok(receipt)
    }

    /// Checks a thread record against the head and advances it.
    fn advance_head(&self, head: &mut ThreadHead, record: &Record) -> Result<(), StoreError> {
        let order = |detail: ThreadOrderProblem| StoreError::ThreadOrder {
            tenant: record.tenant().to_owned(),
            // Only threaded records (messages, blocks) are order-checked.
            thread: record.thread().unwrap_or_default().to_owned(),
            detail,
        };
        match record {
            Record::Message(m) => {
                // `known_message` has checked that the external id is new.
                if m.position != head.messages {
                    return Err(order(ThreadOrderProblem::MessagePosition {
                        external_id: m.external_id.clone(),
                        position: m.position,
                        expected: head.messages,
                    }));
                }
                head.messages += 1;
            }
            Record::Block(b) => {
                let expected_turn = head.end_turn + 1;
                if b.ordinal != head.blocks + 1
                    || b.first_position != head.sealed_messages
                    || b.last_position >= head.messages
                    || b.start_turn != expected_turn
                    || b.end_turn < b.start_turn
                {
                    return Err(order(ThreadOrderProblem::Block {
                        ordinal: b.ordinal,
                        first_position: b.first_position,
                        last_position: b.last_position,
                        start_turn: b.start_turn,
                        end_turn: b.end_turn,
                        expected_ordinal: head.blocks + 1,
                        expected_first_position: head.sealed_messages,
                        messages: head.messages,
                        expected_start_turn: expected_turn,
                    }));
                }
                head.blocks = b.ordinal;
                head.sealed_messages = b.last_position + 1;
                head.end_turn = b.end_turn;
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether a model call is the first with its request hash (then the
    /// model-call index takes it: the first recorded answer wins).
    fn first_model_call(&self, call: &ModelCall, pending: &Pending) -> Result<bool, StoreError> {
        let hash = call.request_hash;
        Ok(!pending.index.model_calls.contains_key(&hash) && self.model_call_seq(&hash)?.is_none())
    }

    /// The sequence number the model-call index holds for a request hash
    /// (the unindexed tail first).
    pub fn model_call_seq(&self, request_hash: &Digest) -> Result<Option<u64>, StoreError> {
        let in_tail = self.lock_tail().model_call(request_hash);
        if let Some(found) = self.visible_in_tail(in_tail)? {
            return Ok(found);
        }
        match self
            .model_calls
            .get(request_hash.as_bytes())
            .map_err(|e| self.storage(e))?
        {
            None => Ok(None),
            Some(v) => keys::decode_seq(&v)
                .map(Some)
                .ok_or_else(|| StoreError::Corrupt {
                    keyspace: keys::MODEL_CALLS,
                    detail: Corruption::SeqValue {
                        entry: IndexEntry::Request(*request_hash),
                        len: v.len(),
                    },
                }),
        }
    }

    /// The first recorded model call whose request hash is `request_hash`
    /// (O(1): one index lookup and one record read), with its id.
    pub fn model_call(
        &self,
        request_hash: &Digest,
    ) -> Result<Option<(RecordId, ModelCall)>, StoreError> {
        let Some(seq) = self.model_call_seq(request_hash)? else {
            return Ok(None);
        };
        let corrupt = |detail: Corruption| StoreError::Corrupt {
            keyspace: keys::MODEL_CALLS,
            detail,
        };
        let entry = IndexEntry::Request(*request_hash);
        let bytes = self.raw_value(seq)?.ok_or_else(|| {
            corrupt(Corruption::EmptySeq {
                entry: entry.clone(),
                seq,
            })
        })?;
        match decode(&bytes).map_err(|source| StoreError::Decode { seq, source })? {
            Record::ModelCall(call) if call.request_hash == *request_hash => {
                Ok(Some((id_of(&bytes), call)))
            }
            other => Err(corrupt(Corruption::WrongRecord {
                entry,
                seq,
                kind: other.kind().name(),
            })),
        }
    }

    /// Number of entries in the model-call index (O(n)).
    pub(crate) fn model_call_index_len(&self) -> Result<usize, StoreError> {
        self.catch_up_indexes()?;
        self.model_calls.len().map_err(|e| self.storage(e))
    }

    /// For a message: its sequence if this very message is stored, `None` if
    /// its external id is new in the thread (then its id is new too: the
    /// external index is written with every message), and an error if the
    /// external id names a different message.
    /// The sequence of the message `m` (whose thread prefix and external
    /// key are given) if the log or the batch holds it; an error if its
    /// external id is taken by another message.
    fn known_message(
        &self,
        pending: &Pending,
        m: &crate::record::Message,
        id: &RecordId,
        prefix: &[u8],
        key: &[u8],
    ) -> Result<Option<u64>, StoreError> {
        check_name("external id", &m.external_id)?;
        let existing = match pending.index.external.get(key) {
            Some((id, _)) => Some(*id),
            // A thread born in this batch has all its keys in the batch.
            None if pending.born.contains(prefix)
                || pending.recent.surely_new_external(prefix, key) =>
            {
                None
            }
            None => self.external_id_at(key)?,
        };
        match existing {
            None => Ok(None),
            Some(existing) if existing == *id => self.seq_in(pending, id),
            Some(existing) => Err(StoreError::ConflictingMessage {
                tenant: m.tenant.clone(),
                thread: m.thread.clone(),
                external_id: m.external_id.clone(),
                existing,
            }),
        }
    }

    fn seq_in(&self, pending: &Pending, id: &RecordId) -> Result<Option<u64>, StoreError> {
        match pending.index.ids.get(id).or_else(|| pending.recent.get(id)) {
            Some(seq) => Ok(Some(*seq)),
            None => self.seq_of(id),
        }
    }

    fn head_in(&self, pending: &Pending, prefix: &[u8]) -> Result<ThreadHead, StoreError> {
        match pending
            .heads
            .get(prefix)
            .or_else(|| pending.recent.heads.get(prefix))
        {
            Some(h) => Ok(*h),
            // A thread with no head has no message yet: zero counters.
            None => Ok(self.head_at(prefix)?.unwrap_or_default()),
        }
    }

    fn head_at(&self, prefix: &[u8]) -> Result<Option<ThreadHead>, StoreError> {
        match self.heads.get(prefix).map_err(|e| self.storage(e))? {
            None => Ok(None),
            Some(v) => ThreadHead::decode(&v)
                .map(Some)
                .ok_or_else(|| StoreError::Corrupt {
                    keyspace: keys::HEADS,
                    detail: Corruption::HeadValue { len: v.len() },
                }),
        }
    }

    fn external_id_at(&self, key: &[u8]) -> Result<Option<RecordId>, StoreError> {
        let in_tail = self.lock_tail().external(key);
        if let Some(found) = self.visible_in_tail(in_tail.map(|(_, seq)| seq))? {
            return Ok(found.and(in_tail.map(|(id, _)| id)));
        }
        match self.external.get(key).map_err(|e| self.storage(e))? {
            None => Ok(None),
            Some(v) => RecordId::from_slice(&v)
                .map(Some)
                .ok_or_else(|| StoreError::Corrupt {
                    keyspace: keys::EXTERNAL,
                    detail: Corruption::IdValue { len: v.len() },
                }),
        }
    }

    /// The sequence number of a record, if it is in the log (the
    /// unindexed tail first).
    pub fn seq_of(&self, id: &RecordId) -> Result<Option<u64>, StoreError> {
        let in_tail = self.lock_tail().seq_of(id);
        if let Some(found) = self.visible_in_tail(in_tail)? {
            return Ok(found);
        }
        match self.ids.get(id.as_bytes()).map_err(|e| self.storage(e))? {
            None => Ok(None),
            Some(v) => keys::decode_seq(&v)
                .map(Some)
                .ok_or_else(|| StoreError::Corrupt {
                    keyspace: keys::IDS,
                    detail: Corruption::SeqValue {
                        entry: IndexEntry::Id(*id),
                        len: v.len(),
                    },
                }),
        }
    }

    /// The id index keyspace's entries from `from` on, in id order: `(id,
    /// seq)` (the indexed records only, not the unindexed tail). An entry
    /// whose key or value has the wrong length is
    /// [`StoreError::Corrupt`].
    pub(crate) fn indexed_ids_from(
        &self,
        from: &RecordId,
    ) -> impl Iterator<Item = Result<(RecordId, u64), StoreError>> + '_ {
        self.ids
            .range(from.as_bytes().as_slice()..)
            .map(move |guard| {
                let (k, v) = guard.into_inner().map_err(|e| self.storage(e))?;
                let id = RecordId::from_slice(&k).ok_or_else(|| StoreError::Corrupt {
                    keyspace: keys::IDS,
                    detail: Corruption::EntryKey { len: k.len() },
                })?;
                let seq = keys::decode_seq(&v).ok_or_else(|| StoreError::Corrupt {
                    keyspace: keys::IDS,
                    detail: Corruption::SeqValue {
                        entry: IndexEntry::Id(id),
                        len: v.len(),
                    },
                })?;
                Ok((id, seq))
            })
    }

    /// Whether a record is in the log.
    pub fn contains(&self, id: &RecordId) -> Result<bool, StoreError> {
        Ok(self.seq_of(id)?.is_some())
    }

    /// Reads a record by id.
    pub fn get(&self, id: &RecordId) -> Result<Option<StoredRecord>, StoreError> {
        let Some(seq) = self.seq_of(id)? else {
            return Ok(None);
        };
        self.indexed_record(id, seq).map(Some)
    }

    /// The record the id index puts at `seq`, decoded;
    /// [`Corruption::EmptySeq`] when that sequence holds nothing.
    fn indexed_record(&self, id: &RecordId, seq: u64) -> Result<StoredRecord, StoreError> {
        let Some(bytes) = self.raw_value(seq)? else {
            return Err(StoreError::Corrupt {
                keyspace: keys::IDS,
                detail: Corruption::EmptySeq {
                    entry: IndexEntry::Id(*id),
                    seq,
                },
            });
        };
        let record = decode(&bytes).map_err(|source| StoreError::Decode { seq, source })?;
        Ok(StoredRecord {
            seq,
            id: *id,
            record,
        })
    }

    /// Reads records by id: one entry per id, in the order given (`None`
    /// for an id not in the log). The sequences are looked up first, then
    /// the records read in log order, so that records sharing a table block
    /// are read from it once (reading thousands of records by id, such as a
    /// graph's assertions, one `get` each re-read a block per record).
    pub fn get_many(&self, ids: &[RecordId]) -> Result<Vec<Option<StoredRecord>>, StoreError> {
        let mut found: Vec<(u64, usize)> = Vec::with_capacity(ids.len());
        for (at, id) in ids.iter().enumerate() {
            if let Some(seq) = self.seq_of(id)? {
                found.push((seq, at));
            }
        }
        found.sort_unstable();
        let mut out: Vec<Option<StoredRecord>> = Vec::with_capacity(ids.len());
        out.resize_with(ids.len(), || None);
        for (seq, at) in found {
            let (Some(id), Some(slot)) = (ids.get(at), out.get_mut(at)) else {
                continue;
            };
            *slot = Some(self.indexed_record(id, seq)?);
        }
        Ok(out)
    }

    /// Finds the ids starting with a hex prefix (at most `limit`).
    pub fn ids_with_prefix(
        &self,
        hex_prefix: &str,
        limit: usize,
    ) -> Result<Vec<RecordId>, StoreError> {
        let even = hex_prefix.len() - hex_prefix.len() % 2;
        // A prefix that is not hex (`get` fails only inside a non-ASCII
        // character) matches no id; it must not become the empty prefix.
        let Some(Ok(bytes)) = hex_prefix.get(..even).map(hex::decode) else {
            return Ok(Vec::new());
        };
        self.catch_up_indexes()?;
        let mut out = Vec::new();
        for guard in self.ids.prefix(&bytes) {
            let key = guard.key().map_err(|e| self.storage(e))?;
            if let Some(id) = RecordId::from_slice(&key)
                && id.to_hex().starts_with(hex_prefix)
            {
                out.push(id);
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// The stored envelope at a sequence number.
    pub fn raw_value(&self, seq: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .records
            .get(keys::seq_key(seq))
            .map_err(|e| self.storage(e))?
            .map(|v| v.to_vec()))
    }

    /// The highest sequence number in the log.
    pub fn last_seq(&self) -> Result<Option<u64>, StoreError> {
        match self.records.last_key_value() {
            None => Ok(None),
            Some(guard) => {
                let key = guard.key().map_err(|e| self.storage(e))?;
                keys::decode_seq(&key)
                    .map(Some)
                    .ok_or_else(|| StoreError::Corrupt {
                        keyspace: keys::RECORDS,
                        detail: Corruption::RecordKey { len: key.len() },
                    })
            }
        }
    }

    /// Records from sequence `from` on, in log order.
    pub fn scan(&self, from: u64) -> impl Iterator<Item = Result<StoredRecord, StoreError>> + '_ {
        self.scan_raw(from).map(move |item| {
            let (seq, bytes) = item?;
            let record = decode(&bytes).map_err(|source| StoreError::Decode { seq, source })?;
            Ok(StoredRecord {
                seq,
                id: id_of(&bytes),
                record,
            })
        })
    }

    /// Records from sequence `from` on, in log order, read in stretches of
    /// [`SCAN_STRETCH`] records, each under a snapshot of its own. A scan
    /// holds fjall's versions alive, and with them every memtable written
    /// while it runs: a view refresh that saves its segments during one
    /// long scan kept all of them in memory (137 MB at the end of a 1 GB
    /// import, measured with a heap profiler). A record appended while the
    /// scan runs may be read: the log only grows at its end, and sequences
    /// are read in order, each once.
    pub fn scan_in_stretches(
        &self,
        from: u64,
    ) -> impl Iterator<Item = Result<StoredRecord, StoreError>> + '_ {
        self.scan_in_stretches_of(from, SCAN_STRETCH)
    }

    /// [`Store::scan_in_stretches`] with stretches of `records` records.
    fn scan_in_stretches_of(
        &self,
        from: u64,
        records: usize,
    ) -> impl Iterator<Item = Result<StoredRecord, StoreError>> + '_ {
        let records = records.max(1);
        let mut next = from;
        let mut stretch: Option<Box<dyn Iterator<Item = Result<StoredRecord, StoreError>> + '_>> =
            None;
        let mut left = 0usize;
        let mut done = false;
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            let scan = stretch.get_or_insert_with(|| {
                left = records;
                Box::new(self.scan(next))
            });
            match scan.next() {
                Some(Ok(stored)) => {
                    next = stored.seq.saturating_add(1);
                    left -= 1;
                    if left == 0 {
                        stretch = None;
                    }
                    Some(Ok(stored))
                }
                Some(Err(e)) => {
                    done = true;
                    Some(Err(e))
                }
                None => {
                    done = true;
                    None
                }
            }
        })
    }

    /// Raw envelopes from sequence `from` on, in log order.
    pub fn scan_raw(
        &self,
        from: u64,
    ) -> impl Iterator<Item = Result<(u64, Vec<u8>), StoreError>> + '_ {
        self.records.range(keys::seq_key(from)..).map(move |guard| {
            let (k, v) = guard.into_inner().map_err(|e| self.storage(e))?;
            let seq = keys::decode_seq(&k).ok_or_else(|| StoreError::Corrupt {
                keyspace: keys::RECORDS,
                detail: Corruption::RecordKey { len: k.len() },
            })?;
            Ok((seq, v.to_vec()))
        })
    }

    /// Ids of one kind, in log order.
    pub fn ids_of_kind(
        &self,
        kind: RecordKind,
    ) -> impl Iterator<Item = Result<(u64, RecordId), StoreError>> + '_ {
        let caught_up = self.catch_up_indexes().err().map(Err);
        caught_up.into_iter().chain(
            self.kinds
                .prefix([kind.code()])
                .map(move |guard| self.kind_entry(guard)),
        )
    }

    /// Ids of one kind from sequence `from` on, in log order (what a view
    /// that follows one kind reads past its watermark).
    pub fn ids_of_kind_from(
        &self,
        kind: RecordKind,
        from: u64,
    ) -> impl Iterator<Item = Result<(u64, RecordId), StoreError>> + '_ {
        let caught_up = self.catch_up_indexes().err().map(Err);
        caught_up.into_iter().chain(
            self.kinds
                .range(keys::kind_key(kind, from)..=keys::kind_key(kind, u64::MAX))
                .map(move |guard| self.kind_entry(guard)),
        )
    }

    /// One entry of the `kinds` index: its sequence and id.
    fn kind_entry(&self, guard: fjall::Guard) -> Result<(u64, RecordId), StoreError> {
        let (k, v) = guard.into_inner().map_err(|e| self.storage(e))?;
        let seq = k.get(1..).and_then(keys::decode_seq);
        match (seq, RecordId::from_slice(&v)) {
            (Some(seq), Some(id)) => Ok((seq, id)),
            _ => Err(StoreError::Corrupt {
                keyspace: keys::KINDS,
                detail: Corruption::EntryKey { len: k.len() },
            }),
        }
    }

    /// The id the kind index holds for a sequence number.
    pub fn indexed_id(&self, kind: RecordKind, seq: u64) -> Result<Option<RecordId>, StoreError> {
        self.catch_up_indexes()?;
        Ok(self
            .kinds
            .get(keys::kind_key(kind, seq))
            .map_err(|e| self.storage(e))?
            .and_then(|v| RecordId::from_slice(&v)))
    }

    /// The records of one thread (messages and blocks), in log order:
    /// `(seq, kind, id)` from sequence `from` on.
    pub fn thread_records(
        &self,
        tenant: &str,
        thread: &str,
        from: u64,
    ) -> impl DoubleEndedIterator<Item = Result<(u64, RecordKind, RecordId), StoreError>> + '_ {
        let prefix = keys::thread_prefix(tenant, thread);
        let start = keys::thread_seq_key(&prefix, from);
        let end = keys::thread_seq_key(&prefix, u64::MAX);
        let plen = prefix.len();
        // No catch-up (as `children`): the records past the watermark are
        // read from the tail; a flush per read made a backfill of many
        // interleaved threads, each loaded again when it comes back, flush
        // all the time. The watermark and the tail's entries are read
        // together, and stored entries past that watermark (a flush in
        // between) are the tail's, so none is seen twice.
        let (watermark, in_tail) = {
            let tail = self.lock_tail();
            (tail.watermark, tail.thread_links(&prefix, from))
        };
        let in_tail = self.visible_links(in_tail);
        self.threads
            .range(start..=end)
            .map(move |guard| {
                let (k, v) = guard.into_inner().map_err(|e| self.storage(e))?;
                let seq = k.get(plen..).and_then(keys::decode_seq);
                let kind = v.first().copied().and_then(RecordKind::from_code);
                let id = v.get(1..).and_then(RecordId::from_slice);
                match (seq, kind, id) {
                    (Some(seq), Some(kind), Some(id)) => Ok((seq, kind, id)),
                    _ => Err(StoreError::Corrupt {
                        keyspace: keys::THREADS,
                        detail: Corruption::EntryValue { len: v.len() },
                    }),
                }
            })
            .filter(move |entry| entry.as_ref().map_or(true, |(seq, _, _)| *seq <= watermark))
            .chain(in_tail)
    }

    /// The records that cite `parent`, in log order: `(seq, kind, id)`, of
    /// the kinds indexed as children ([`RecordKind::indexed_as_child`]).
    pub fn children(
        &self,
        parent: &RecordId,
    ) -> impl DoubleEndedIterator<Item = Result<(u64, RecordKind, RecordId), StoreError>> + '_ {
        // The tail's links come after the stored ones. The watermark and the
        // links are read together, and stored links past that watermark (a
        // flush in between) are the tail's, so none is seen twice.
        let (watermark, in_tail) = {
            let tail = self.lock_tail();
            (tail.watermark, tail.children(parent))
        };
        let in_tail = self.visible_links(in_tail);
        let stored = self.children.prefix(parent.as_bytes()).map(move |guard| {
            let (k, v) = guard.into_inner().map_err(|e| self.storage(e))?;
            let seq = k.get(32..).and_then(keys::decode_seq);
            let kind = v.first().copied().and_then(RecordKind::from_code);
            let id = v.get(1..).and_then(RecordId::from_slice);
            match (seq, kind, id) {
                (Some(seq), Some(kind), Some(id)) => Ok((seq, kind, id)),
                _ => Err(StoreError::Corrupt {
                    keyspace: keys::CHILDREN,
                    detail: Corruption::EntryValue { len: v.len() },
                }),
            }
        });
        stored
            .filter(move |link| link.as_ref().map_or(true, |l| l.0 <= watermark))
            .chain(in_tail)
    }

    /// The children of `parent` of one kind, decoded, in log order. The
    /// kind must be indexed as a child ([`RecordKind::indexed_as_child`]).
    pub fn children_of_kind(
        &self,
        parent: &RecordId,
        kind: RecordKind,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        if !kind.indexed_as_child() {
            return Err(StoreError::NotIndexedAsChild { kind: kind.name() });
        }
        let mut out = Vec::new();
        for entry in self.children(parent) {
            let (_, k, id) = entry?;
            if k == kind
                && let Some(r) = self.get(&id)?
            {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The head of a thread, if it has any record.
    pub fn thread_head(
        &self,
        tenant: &str,
        thread: &str,
    ) -> Result<Option<ThreadHead>, StoreError> {
        self.head_at(&keys::thread_prefix(tenant, thread))
    }

    /// Every thread with its head, ordered by (tenant, thread) key bytes.
    pub fn thread_heads(&self) -> Result<Vec<(String, String, ThreadHead)>, StoreError> {
        let mut out = Vec::new();
        for guard in self.heads.iter() {
            let (k, v) = guard.into_inner().map_err(|e| self.storage(e))?;
            let parsed = keys::parse_thread_prefix(&k).zip(ThreadHead::decode(&v));
            let Some(((tenant, thread), head)) = parsed else {
                return Err(StoreError::Corrupt {
                    keyspace: keys::HEADS,
                    detail: Corruption::EntryKey { len: k.len() },
                });
            };
            out.push((tenant, thread, head));
        }
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        Ok(out)
    }

    /// The message with this external id in the thread.
    pub fn message_by_external_id(
        &self,
        tenant: &str,
        thread: &str,
        external_id: &str,
    ) -> Result<Option<RecordId>, StoreError> {
        self.external_id_at(&keys::external_key(
            &keys::thread_prefix(tenant, thread),
            external_id,
        ))
    }

    /// Number of records of a kind.
    pub fn count(&self, kind: RecordKind) -> Result<u64, StoreError> {
        // No counter is no record of the kind yet; a counter that is not 8
        // bytes is damage, not zero.
        match self
            .meta
            .get(keys::count_key(kind))
            .map_err(|e| self.storage(e))?
        {
            None => Ok(0),
            Some(v) => keys::decode_seq(&v).ok_or_else(|| StoreError::Corrupt {
                keyspace: keys::META,
                detail: Corruption::Counter {
                    kind: kind.name(),
                    len: v.len(),
                },
            }),
        }
    }

    /// A configuration value of the data directory.
    pub fn config(&self, name: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .meta
            .get(keys::config_key(name))
            .map_err(|e| self.storage(e))?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Every configuration value whose name starts with `prefix`, as
    /// (name, value), in name order.
    pub fn configs_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, StoreError> {
        let key_prefix = keys::config_key(prefix);
        let skip = keys::config_key("").len();
        let mut out = Vec::new();
        for item in self.meta.prefix(&key_prefix) {
            let (k, v) = item.into_inner().map_err(|e| self.storage(e))?;
            // Every key of the prefix scan starts with the (longer) prefix.
            #[expect(
                clippy::expect_used,
                reason = "a prefix scan yields keys that start with the prefix"
            )]
            let name = k.get(skip..).expect("key starts with the config prefix");
            let name = String::from_utf8_lossy(name).into_owned();
            out.push((name, String::from_utf8_lossy(&v).into_owned()));
        }
        Ok(out)
    }

    /// Sets a configuration value (fsynced).
    pub fn set_config(&self, name: &str, value: &str) -> Result<(), StoreError> {
        let _writer = self.lock_writer();
        let mut batch = self.db.batch().durability(Some(PersistMode::SyncAll));
        batch.insert(&self.meta, keys::config_key(name), value.as_bytes());
        batch.commit().map_err(|e| self.storage(e))
    }

    /// Removes a configuration value (fsynced); removing an absent one is
    /// no error.
    pub fn remove_config(&self, name: &str) -> Result<(), StoreError> {
        let _writer = self.lock_writer();
        let mut batch = self.db.batch().durability(Some(PersistMode::SyncAll));
        batch.remove(&self.meta, keys::config_key(name));
        batch.commit().map_err(|e| self.storage(e))
    }

    /// Writes a view value in the single-value layout of earlier builds
    /// (`[u64 BE last_seq][state]`, no chunks), so that tests can show such a
    /// state is rebuilt, never read. Only with the `test-support` feature.
    #[cfg(feature = "test-support")]
    pub fn save_view_state(
        &self,
        view: &str,
        tenant: &str,
        last_seq: u64,
        state: &[u8],
    ) -> Result<(), StoreError> {
        let mut value = Vec::with_capacity(8 + state.len());
        value.extend_from_slice(&last_seq.to_be_bytes());
        value.extend_from_slice(state);
        let mut batch = self.db.batch();
        batch.insert(&self.views, keys::view_key(view, tenant), value);
        batch.commit().map_err(|e| self.storage(e))
    }

    /// Stores a large view state for a tenant with the last sequence it
    /// applied, split into chunks of at most [`VIEW_CHUNK_BYTES`] (fjall keeps
    /// values whole in memtables and blocks, so one value of hundreds of MB
    /// is avoided). The head value at the view's key is `[u64 BE last_seq]
    /// [u32 BE chunk count][u64 BE total length]`; chunk `i` is at the view's
    /// key followed by `[u32 BE i]`. Head, chunks and the removal of chunks
    /// left over from a longer earlier state are one batch, so a reader sees
    /// the old state or the new one, never a mix. Buffered: views are
    /// derived and never hold the only copy of anything, so a crash loses at
    /// most a refresh, redone from the log.
    pub fn save_view_chunks(
        &self,
        view: &str,
        tenant: &str,
        last_seq: u64,
        state: &[u8],
    ) -> Result<(), StoreError> {
        let mut batch = self.db.batch();
        self.stage_view_chunks(&mut batch, view, tenant, last_seq, state)?;
        batch.commit().map_err(|e| self.storage(e))?;
        self.bound_views_memtable(state.len())
    }

    /// Gives back the memory of the writer's cache of its latest batches
    /// when a backfill filled it (about 25 MB: two generations of message
    /// ids and the external-id filter), before the work that follows a
    /// backfill (the view refresh). The cache only speeds up appends: the
    /// next one starts it again, and nothing it held can be missed (the
    /// indexes hold every committed record).
    pub fn trim_writer_cache(&self) {
        let mut writer = self.lock_writer();
        if writer.recent.is_filled() {
            writer.recent = Recent::default();
        }
    }

    /// Rotates the `views` memtable once [`VIEWS_ROTATED_BYTES`] were
    /// written to it, and holds the view writer while more than one rotated
    /// memtable waits for its flush. fjall rotates a full memtable on its
    /// background worker, which may be busy compacting the records written
    /// just before (the refresh at the end of an ingest): without this, a
    /// refresh's segments all stayed in memtables (137 MB of views at the
    /// peak of a 1 GB import, measured with a heap profiler).
    fn bound_views_memtable(&self, written: usize) -> Result<(), StoreError> {
        let written = written as u64;
        let before = self.views_unrotated.fetch_add(written, Ordering::Relaxed);
        if before + written >= VIEWS_ROTATED_BYTES {
            self.views_unrotated.store(0, Ordering::Relaxed);
            self.views.rotate_memtable().map_err(|e| self.storage(e))?;
        }
        while self.views.sealed_memtable_count() > 1 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Ok(())
    }

    /// Adds to `batch` the head and chunks of a chunked view state and the
    /// removal of the chunks left over from a longer earlier state under
    /// the same name.
    fn stage_view_chunks(
        &self,
        batch: &mut fjall::OwnedWriteBatch,
        view: &str,
        tenant: &str,
        last_seq: u64,
        state: &[u8],
    ) -> Result<(), StoreError> {
        let count = state.len().div_ceil(VIEW_CHUNK_BYTES);
        let count32 = u32::try_from(count).map_err(|_| StoreError::Corrupt {
            keyspace: keys::VIEWS,
            detail: Corruption::ViewTooLarge {
                view: view.to_owned(),
                len: state.len(),
            },
        })?;
        let old_count = self.old_chunk_count(view, tenant)?;
        let mut head = Vec::with_capacity(CHUNK_HEAD_LEN);
        head.extend_from_slice(&last_seq.to_be_bytes());
        head.extend_from_slice(&count32.to_be_bytes());
        head.extend_from_slice(&(state.len() as u64).to_be_bytes());
        batch.insert(&self.views, keys::view_key(view, tenant), head);
        for (i, chunk) in (0u32..).zip(state.chunks(VIEW_CHUNK_BYTES)) {
            batch.insert(&self.views, keys::view_chunk_key(view, tenant, i), chunk);
        }
        for i in count32..old_count {
            batch.remove(&self.views, keys::view_chunk_key(view, tenant, i));
        }
        Ok(())
    }

    /// The chunks a chunked view state under `view` holds now (from its
    /// head, or by prefix when the head is not a chunk head).
    fn old_chunk_count(&self, view: &str, tenant: &str) -> Result<u32, StoreError> {
        Ok(match self.chunk_head(view, tenant)? {
            Some(Ok((_, old, _))) => old,
            Some(Err(_)) => self.chunk_count_by_prefix(view, tenant)?,
            None => 0,
        })
    }

    /// Saves segment `index` of a segmented view state (a state kept as a
    /// run of segments, each a chunked state of its own under
    /// [`segment_name`]) and makes it the last one: in one batch, the
    /// segment's chunks, the view's head `[b'S'][u64 BE last_seq][u32 BE
    /// segments][u64 BE records]` with `segments = index + 1` and `records`
    /// the records the last segment applied, and the removal of any
    /// segment after it (or of the chunks of a single, unsegmented state
    /// an earlier build left under the view's name). A reader sees the
    /// segments before the batch or after it, never a mix, so the head's
    /// sequence always matches what the segments applied. Buffered, like
    /// every view write.
    pub fn save_view_segment(
        &self,
        view: &str,
        tenant: &str,
        index: u32,
        last_seq: u64,
        records: u64,
        state: &[u8],
    ) -> Result<(), StoreError> {
        let segments = index.checked_add(1).ok_or_else(|| StoreError::Corrupt {
            keyspace: keys::VIEWS,
            detail: Corruption::ViewTooLarge {
                view: view.to_owned(),
                len: state.len(),
            },
        })?;
        let mut batch = self.db.batch();
        self.stage_view_chunks(
            &mut batch,
            &segment_name(view, index),
            tenant,
            last_seq,
            state,
        )?;
        let old_segments = match self.view_segments(view, tenant) {
            Ok(Some((_, old, _))) => old,
            Ok(None) => 0,
            // An unsegmented state (an earlier build's): its chunks go.
            Err(StoreError::Corrupt { .. }) => {
                for i in 0..self.old_chunk_count(view, tenant)? {
                    batch.remove(&self.views, keys::view_chunk_key(view, tenant, i));
                }
                0
            }
            Err(e) => return Err(e),
        };
        for stale in segments..old_segments {
            let name = segment_name(view, stale);
            for i in 0..self.old_chunk_count(&name, tenant)? {
                batch.remove(&self.views, keys::view_chunk_key(&name, tenant, i));
            }
            batch.remove(&self.views, keys::view_key(&name, tenant));
        }
        let mut head = Vec::with_capacity(SEGMENTS_HEAD_LEN);
        head.push(SEGMENTS_HEAD_TAG);
        head.extend_from_slice(&last_seq.to_be_bytes());
        head.extend_from_slice(&segments.to_be_bytes());
        head.extend_from_slice(&records.to_be_bytes());
        batch.insert(&self.views, keys::view_key(view, tenant), head);
        batch.commit().map_err(|e| self.storage(e))?;
        self.bound_views_memtable(state.len())
    }

    /// The head of a segmented view state: `(last_seq, segments, records
    /// the last segment applied)`, `None`
    /// when there is none, [`StoreError::Corrupt`] when the value at the
    /// view's key is not a segments head (an unsegmented state of an
    /// earlier build included: the caller rebuilds).
    pub fn view_segments(
        &self,
        view: &str,
        tenant: &str,
    ) -> Result<Option<(u64, u32, u64)>, StoreError> {
        let Some(v) = self
            .views
            .get(keys::view_key(view, tenant))
            .map_err(|e| self.storage(e))?
        else {
            return Ok(None);
        };
        // After the tag, the chunk head's layout: sequence, count, length.
        let parsed = v
            .split_first()
            .filter(|(tag, _)| **tag == SEGMENTS_HEAD_TAG)
            .and_then(|(_, rest)| head_fields(rest));
        match parsed {
            Some(head) => Ok(Some(head)),
            None => Err(StoreError::Corrupt {
                keyspace: keys::VIEWS,
                detail: Corruption::ViewHead {
                    view: view.to_owned(),
                    len: v.len(),
                    expected: SEGMENTS_HEAD_LEN,
                },
            }),
        }
    }

    /// Segment `index` of a segmented view state: the last sequence it
    /// applied and its bytes (see [`Store::view_chunks`]).
    pub fn view_segment(
        &self,
        view: &str,
        tenant: &str,
        index: u32,
    ) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        self.view_chunks(&segment_name(view, index), tenant)
    }

    /// A view state saved by [`Store::save_view_chunks`]: the last sequence
    /// it applied and the reassembled bytes. A head or chunk that does not
    /// fit the layout (missing chunk, wrong length) is [`StoreError::Corrupt`];
    /// the caller decides whether to rebuild.
    pub fn view_chunks(
        &self,
        view: &str,
        tenant: &str,
    ) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        let (seq, count, total) = match self.chunk_head(view, tenant)? {
            None => return Ok(None),
            Some(Ok(head)) => head,
            Some(Err(detail)) => {
                return Err(StoreError::Corrupt {
                    keyspace: keys::VIEWS,
                    detail,
                });
            }
        };
        let corrupt = |detail: Corruption| StoreError::Corrupt {
            keyspace: keys::VIEWS,
            detail,
        };
        let total = usize::try_from(total).map_err(|_| {
            corrupt(Corruption::ViewTotal {
                view: view.to_owned(),
                total,
            })
        })?;
        let expected = total.div_ceil(VIEW_CHUNK_BYTES);
        if usize::try_from(count).ok() != Some(expected) {
            return Err(corrupt(Corruption::ViewChunkCount {
                view: view.to_owned(),
                count,
                total,
            }));
        }
        let mut out = Vec::with_capacity(total);
        for i in 0..count {
            let chunk = self
                .views
                .get(keys::view_chunk_key(view, tenant, i))
                .map_err(|e| self.storage(e))?
                .ok_or_else(|| {
                    corrupt(Corruption::ViewChunkMissing {
                        view: view.to_owned(),
                        index: i,
                        count,
                    })
                })?;
            out.extend_from_slice(&chunk);
        }
        if out.len() != total {
            return Err(corrupt(Corruption::ViewLength {
                view: view.to_owned(),
                found: out.len(),
                total,
            }));
        }
        Ok(Some((seq, out)))
    }

    /// The head of a chunked view state: `(last_seq, chunks, total length)`,
    /// or why the value is not such a head.
    #[allow(clippy::type_complexity)]
    fn chunk_head(
        &self,
        view: &str,
        tenant: &str,
    ) -> Result<Option<Result<(u64, u32, u64), Corruption>>, StoreError> {
        let Some(v) = self
            .views
            .get(keys::view_key(view, tenant))
            .map_err(|e| self.storage(e))?
        else {
            return Ok(None);
        };
        let parsed = head_fields(v.as_ref()).ok_or_else(|| Corruption::ViewHead {
            view: view.to_owned(),
            len: v.len(),
            expected: CHUNK_HEAD_LEN,
        });
        Ok(Some(parsed))
    }

    /// Number of chunk keys under a view's key (for a damaged head).
    fn chunk_count_by_prefix(&self, view: &str, tenant: &str) -> Result<u32, StoreError> {
        let prefix = keys::view_key(view, tenant);
        let mut highest = 0u32;
        for item in self.views.prefix(&prefix) {
            let key = item.key().map_err(|e| self.storage(e))?;
            if let Some(index) = key
                .get(prefix.len()..)
                .and_then(|rest| <[u8; 4]>::try_from(rest).ok())
            {
                highest = highest.max(u32::from_be_bytes(index).saturating_add(1));
            }
        }
        Ok(highest)
    }

    /// Bytes the data directory takes on disk.
    pub fn disk_space(&self) -> Result<u64, StoreError> {
        self.db.disk_space().map_err(|e| self.storage(e))
    }

    /// How many batches were committed with and without fsync since open.
    pub fn commit_counts(&self) -> CommitCounts {
        CommitCounts {
            synced: self.synced_commits.load(Ordering::Relaxed),
            buffered: self.buffered_commits.load(Ordering::Relaxed),
        }
    }

    /// Number of entries in the id index (O(n)).
    pub(crate) fn id_index_len(&self) -> Result<usize, StoreError> {
        self.catch_up_indexes()?;
        self.ids.len().map_err(|e| self.storage(e))
    }

    /// Tables in level 0 of each index keyspace (ids, kinds, threads,
    /// children, external ids, model calls). Only with the `test-support`
    /// feature.
    #[cfg(feature = "test-support")]
    pub fn index_level0_tables(&self) -> [usize; 6] {
        self.index_keyspaces().map(|ks| ks.l0_table_count())
    }

    /// Waits until no merge of an index keyspace is asked for or running.
    /// Only with the `test-support` feature.
    #[cfg(feature = "test-support")]
    pub fn wait_for_index_merges(&self) {
        self.merger.wait_idle();
    }

    /// Flushes every keyspace's memtable to a table and waits, so that the
    /// records live in table files (tests damage those). Only with the
    /// `test-support` feature.
    #[cfg(feature = "test-support")]
    pub fn flush_for_test(&self) -> Result<(), StoreError> {
        for (_, keyspace) in self.keyspaces() {
            keyspace
                .rotate_memtable_and_wait()
                .map_err(|e| self.storage(e))?;
        }
        Ok(())
    }

    /// Removes the model-call index entry of a request hash: simulates a
    /// damaged index so tests can prove `audit` catches it.
    #[cfg(feature = "test-support")]
    pub fn remove_model_call_index_for_test(
        &self,
        request_hash: &Digest,
    ) -> Result<(), StoreError> {
        self.catch_up_indexes()?;
        let _writer = self.lock_writer();
        let mut batch = self.db.batch().durability(Some(PersistMode::SyncAll));
        batch.remove(&self.model_calls, request_hash.as_bytes().as_slice());
        batch.commit().map_err(|e| self.storage(e))
    }

    /// Flips the last bit of the value of the first entry of an index
    /// keyspace (`threads`, `children`, …) once the indexes are caught up:
    /// simulates a damaged index so tests can prove `audit` catches it.
    /// False when the keyspace is unknown or empty.
    #[cfg(feature = "test-support")]
    pub fn tamper_index_for_test(&self, keyspace: &str) -> Result<bool, StoreError> {
        self.catch_up_indexes()?;
        let _writer = self.lock_writer();
        let Some((_, ks)) = self.keyspaces().into_iter().find(|(n, _)| *n == keyspace) else {
            return Ok(false);
        };
        let Some(guard) = ks.first_key_value() else {
            return Ok(false);
        };
        let (key, value) = guard.into_inner().map_err(|e| self.storage(e))?;
        let mut value = value.to_vec();
        if let Some(byte) = value.last_mut() {
            *byte ^= 1;
        }
        let mut batch = self.db.batch().durability(Some(PersistMode::SyncAll));
        batch.insert(ks, key, value);
        batch.commit().map_err(|e| self.storage(e))?;
        Ok(true)
    }

    /// Overwrites the stored value at `seq` without touching any index:
    /// simulates on-disk corruption so tests can prove `audit` catches it.
    #[cfg(feature = "test-support")]
    pub fn overwrite_value_for_test(&self, seq: u64, value: &[u8]) -> Result<(), StoreError> {
        let _writer = self.lock_writer();
        let mut batch = self.db.batch().durability(Some(PersistMode::SyncAll));
        batch.insert(&self.records, keys::seq_key(seq), value);
        batch.commit().map_err(|e| self.storage(e))
    }
}

/// The index stage's last flush: the unindexed tail is written when the
/// store is closed (a failure is no loss: the next open indexes the
/// records past the watermark).
/// The index stage on a thread of its own ([`Store::index_stage`]): the
/// writer freezes each full tail for it and goes on appending while
/// [`IndexStage::run`] writes the frozen entries and their watermark, so
/// the writer's commits never wait for an index flush (only for a frozen
/// tail the stage has not finished when the next one is full).
pub struct IndexStage<'s> {
    store: &'s Store,
    stopping: std::sync::atomic::AtomicBool,
}

impl IndexStage<'_> {
    /// Writes each tail the writer freezes, until [`IndexStage::stop`];
    /// a tail frozen before the stop is written first. Returns how many
    /// tails this thread wrote. On an error the writer flushes its tails
    /// itself again (and meets the error there).
    pub fn run(&self) -> Result<u64, StoreError> {
        let result = self.serve();
        if result.is_err() {
            self.store.index_stage.store(false, Ordering::Release);
            self.store.tail_changed.notify_all();
        }
        result
    }

    fn serve(&self) -> Result<u64, StoreError> {
        let store = self.store;
        let mut written = 0;
        loop {
            {
                let mut tail = store.lock_tail();
                while tail.frozen.is_none() && !self.stopping.load(Ordering::Acquire) {
                    tail = store
                        .tail_changed
                        .wait(tail)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                if tail.frozen.is_none() {
                    return Ok(written);
                }
            }
            let _flush = store.lock_flush();
            if store.write_frozen()? {
                written += 1;
            }
        }
    }

    /// Asks [`IndexStage::run`] to return once no frozen tail is left.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        // Taken so that a stage between its check and its wait sees it.
        drop(self.store.lock_tail());
        self.store.tail_changed.notify_all();
    }
}

impl Drop for IndexStage<'_> {
    fn drop(&mut self) {
        self.store.index_stage.store(false, Ordering::Release);
        drop(self.store.lock_tail());
        self.store.tail_changed.notify_all();
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = self.catch_up_indexes();
        self.merger.stop();
        self.close_manifest();
    }
}

/// Tails of at least this many records are flushed by bulk ingestion.
const INGEST_FROM_RECORDS: usize = 4096;

/// Records in the tail before a flush: [`FLUSH_RECORDS`], or with the
/// `failpoints` feature (crash tests) `STRATAFLOW_INDEX_FLUSH_RECORDS`.
fn initial_flush_records() -> usize {
    #[cfg(feature = "failpoints")]
    if let Some(n) = std::env::var("STRATAFLOW_INDEX_FLUSH_RECORDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n.max(1);
    }
    FLUSH_RECORDS
}

/// [`StoreError::UnsupportedLayout`] when the manifest's layout is one
/// this build cannot read.
fn refuse_unknown_layout(dir: &Path) -> Result<(), StoreError> {
    match Manifest::unsupported_layout(dir) {
        Some(found) => Err(StoreError::UnsupportedLayout {
            path: dir.to_path_buf(),
            file: crate::integrity::manifest::FILE,
            found,
            supported: crate::integrity::manifest::FORMAT,
        }),
        None => Ok(()),
    }
}

/// Holds the directory's lock while its files are checked (no other process
/// may write them meanwhile); released before fjall takes it.
fn lock_for_check(dir: &Path) -> Result<Option<std::fs::File>, StoreError> {
    let path = dir.join("lock");
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(StoreError::Storage {
                path: dir.to_path_buf(),
                source: fjall::Error::Io(e),
            });
        }
    };
    try_lock(&file).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            StoreError::InUse {
                path: dir.to_path_buf(),
            }
        } else {
            StoreError::Storage {
                path: dir.to_path_buf(),
                source: fjall::Error::Io(e),
            }
        }
    })?;
    Ok(Some(file))
}

/// An exclusive, non-blocking `flock` of the file (what fjall takes).
#[cfg(unix)]
fn try_lock(file: &std::fs::File) -> std::io::Result<()> {
    rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(std::io::Error::from)
}

/// Elsewhere fjall's own open reports a held lock.
#[cfg(not(unix))]
fn try_lock(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

fn check_name(field: &'static str, name: &str) -> Result<(), StoreError> {
    if name.len() > MAX_NAME_BYTES {
        return Err(StoreError::NameTooLong {
            field,
            len: name.len(),
            max: MAX_NAME_BYTES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod error_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::integrity::ManifestDamage;
    use crate::record::{Message, Role};
    use crate::time::SourceTime;

    fn message(ext: &str, position: u64) -> Record {
        Record::Message(Message {
            tenant: String::new(),
            thread: "t".into(),
            external_id: ext.into(),
            position,
            role: Role::User,
            speaker: None,
            content: format!("turn {position}"),
            tool_calls: vec![],
            time: SourceTime::utc_without_offset(1_700_000_000_000),
        })
    }

    fn filled(dir: &Path) -> Store {
        let store = Store::open(dir).unwrap();
        store
            .append(&[message("1", 0), message("2", 1)], Durability::Sync)
            .unwrap();
        store
    }

    /// The manifest's last sequence on disk.
    fn manifest_last(dir: &Path) -> Option<u64> {
        Manifest::load(dir).unwrap().map(|m| m.last_seq)
    }

    /// A scan in stretches reads every record once, in order, across
    /// stretch boundaries, from any start; records appended while it runs
    /// are read too (after those before them).
    #[test]
    fn a_scan_in_stretches_reads_each_record_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let first: Vec<Record> = (0..10).map(|p| message(&format!("m{p}"), p)).collect();
        store.append(&first, Durability::Buffered).unwrap();
        for from in [0, 1, 4, 10, 11] {
            for stretch in [1, 3, 10, 64] {
                let seqs: Vec<u64> = store
                    .scan_in_stretches_of(from, stretch)
                    .map(|r| r.unwrap().seq)
                    .collect();
                let expected: Vec<u64> = (from.max(1)..=10).collect();
                assert_eq!(seqs, expected, "from {from}, stretches of {stretch}");
            }
        }
        let mut scan = store.scan_in_stretches_of(1, 3);
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(scan.next().unwrap().unwrap().seq);
        }
        store
            .append(
                &[message("m10", 10), message("m11", 11)],
                Durability::Buffered,
            )
            .unwrap();
        seen.extend(scan.map(|r| r.unwrap().seq));
        assert_eq!(seen, (1..=12).collect::<Vec<u64>>());
    }

    /// The writer rotates the `records` memtable once its commits filled
    /// it, without waiting for fjall's background worker (whose own
    /// rotation of this keyspace is at twice the size, never reached here).
    #[test]
    fn the_writer_rotates_the_records_memtable_it_filled() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let big = |position: u64| {
            let Record::Message(mut m) = message(&format!("m{position}"), position) else {
                unreachable!("a message")
            };
            m.content = "x".repeat(256 * 1024);
            Record::Message(m)
        };
        let rotated =
            |store: &Store| store.records.sealed_memtable_count() + store.records.table_count() > 0;
        let per_commit = 4u64;
        let commits = MEMTABLE_BYTES / (per_commit * 256 * 1024);
        for commit in 0..commits {
            assert!(!rotated(&store), "rotated before commit {commit}");
            let batch: Vec<Record> = (0..per_commit)
                .map(|i| big(commit * per_commit + i))
                .collect();
            store.append(&batch, Durability::Buffered).unwrap();
        }
        assert!(rotated(&store), "not rotated after {commits} commits");
        assert!(store.lock_writer().unrotated[0] < MEMTABLE_BYTES);
    }

    #[test]
    fn the_manifest_claims_only_synced_records_and_catches_up_on_close() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path());
        assert_eq!(manifest_last(dir.path()), Some(2));
        store
            .append(&[message("3", 2)], Durability::Buffered)
            .unwrap();
        assert_eq!(manifest_last(dir.path()), Some(2), "unsynced: not claimed");
        store.append(&[message("4", 3)], Durability::Sync).unwrap();
        assert_eq!(manifest_last(dir.path()), Some(4), "a sync covers both");
        store
            .append(&[message("5", 4)], Durability::Buffered)
            .unwrap();
        drop(store);
        assert_eq!(manifest_last(dir.path()), Some(5), "closing persists");
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.last_seq().unwrap(), Some(5));
    }

    #[test]
    fn a_malformed_counter_is_corrupt_not_zero() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path());
        assert_eq!(store.count(RecordKind::Message).unwrap(), 2);
        store
            .meta
            .insert(keys::count_key(RecordKind::Message), [0u8; 3])
            .unwrap();
        match store.count(RecordKind::Message) {
            Err(StoreError::Corrupt { keyspace, detail }) => {
                assert_eq!(keyspace, keys::META);
                assert_eq!(
                    detail,
                    Corruption::Counter {
                        kind: "message",
                        len: 3
                    }
                );
                assert!(detail.to_string().contains("3 bytes"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn counters_that_disagree_with_the_log_are_typed_damage() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path());
        store
            .meta
            .insert(keys::count_key(RecordKind::Message), 5u64.to_be_bytes())
            .unwrap();
        store.db.persist(PersistMode::SyncAll).unwrap();
        drop(store);
        match Store::open(dir.path()) {
            Err(StoreError::Damaged { damage, .. }) => {
                assert_eq!(
                    *damage,
                    Damage::Inconsistent(Inconsistency::KindCounters { total: 5, last: 2 })
                );
                assert_eq!(
                    damage.to_string(),
                    "the kind counters add up to 5 records but the log holds 1..=2"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_unparsable_manifest_is_typed_damage_with_its_position() {
        let dir = tempfile::tempdir().unwrap();
        drop(filled(dir.path()));
        std::fs::write(
            dir.path().join(crate::integrity::manifest::FILE),
            "{\"format\": 1,\n oops",
        )
        .unwrap();
        match Store::open(dir.path()) {
            Err(StoreError::Damaged { damage, .. }) => match *damage {
                Damage::Manifest(ManifestDamage::Invalid { line, column, .. }) => {
                    assert_eq!((line, column), (2, 2));
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_non_hex_prefix_matches_no_id() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path());
        assert_eq!(store.ids_with_prefix("", 10).unwrap().len(), 2);
        assert!(store.ids_with_prefix("é", 10).unwrap().is_empty());
        assert!(store.ids_with_prefix("aé", 10).unwrap().is_empty());
    }
}
