//! `audit`: recompute every record's hash, check that every parent exists
//! before its child, that the sequence is contiguous and that the indexes
//! agree with the records: each index keyspace's digest equals the digest
//! of a rebuild from the records up to the index watermark.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::envelope::{decode, id_of, peek_kind};
use crate::error::StoreError;
use crate::id::{Digest, RecordId};
use crate::index::{INDEX_KEYSPACES, IndexDigest, Rebuild};
use crate::record::{Record, RecordKind};
use crate::store::Store;

/// Configuration value set while `import parquet` loads a directory and
/// removed when the import is complete (its value names the export): a
/// directory that still has it holds only part of an export.
pub const IMPORT_INCOMPLETE_CONFIG: &str = "import.parquet.incomplete";

/// One thing audit found wrong.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "problem")]
pub enum AuditProblem {
    /// The stored value no longer hashes to the id the log recorded for it.
    HashMismatch {
        /// Sequence.
        seq: u64,
        /// The id recorded for this sequence.
        recorded: RecordId,
        /// The hash of the bytes now stored.
        actual: RecordId,
    },
    /// The stored value cannot be decoded.
    Undecodable {
        /// Sequence.
        seq: u64,
        /// The id recorded for this sequence, if the header was readable.
        recorded: Option<RecordId>,
        /// Why.
        error: String,
    },
    /// The id index does not point at this record.
    IdIndexMismatch {
        /// Sequence.
        seq: u64,
        /// Record id.
        id: RecordId,
        /// Where the index points (None: nowhere).
        indexed_seq: Option<u64>,
    },
    /// A parent is missing or comes later in the log.
    BadParent {
        /// Sequence.
        seq: u64,
        /// Record id.
        id: RecordId,
        /// Parent id.
        parent: RecordId,
        /// Parent's sequence (None: missing).
        parent_seq: Option<u64>,
    },
    /// A sequence number is missing.
    SequenceGap {
        /// Expected sequence.
        expected: u64,
        /// Found instead.
        found: u64,
    },
    /// The id index has entries that no record accounts for.
    IndexSize {
        /// Records in the log.
        records: u64,
        /// Entries in the id index.
        indexed: u64,
    },
    /// The model-call index does not point at the first model call recorded
    /// for this request hash.
    ModelCallIndexMismatch {
        /// Sequence of the first model call with this request hash.
        seq: u64,
        /// Its record id.
        id: RecordId,
        /// The request hash.
        request_hash: Digest,
        /// Where the index points (None: nowhere).
        indexed_seq: Option<u64>,
    },
    /// Entries of a keyspace cannot be read (a damaged table block): found
    /// by `audit --deep`, which reads every entry of every keyspace.
    Unreadable {
        /// Keyspace.
        keyspace: &'static str,
        /// For the records keyspace: the unreadable sequence numbers, as
        /// inclusive ranges.
        records: Vec<(u64, u64)>,
        /// The storage engine's error.
        error: String,
    },
    /// The model-call index has entries that no model call accounts for.
    ModelCallIndexSize {
        /// Distinct request hashes among the model calls.
        requests: u64,
        /// Entries in the model-call index.
        indexed: u64,
    },
    /// An index keyspace differs from a rebuild from the records (an entry
    /// missing, extra or altered).
    IndexDigestMismatch {
        /// Keyspace.
        keyspace: &'static str,
        /// Entries stored.
        stored_entries: u64,
        /// Digest of the stored entries.
        stored: String,
        /// Entries of the rebuild.
        rebuilt_entries: u64,
        /// Digest of the rebuild.
        rebuilt: String,
    },
    /// An `import parquet` into this directory did not finish
    /// ([`IMPORT_INCOMPLETE_CONFIG`] is set): it holds only part of the
    /// export.
    IncompleteImport {
        /// The export it was loading.
        source: String,
    },
}

impl std::fmt::Display for AuditProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::HashMismatch {
                seq,
                recorded,
                actual,
            } => write!(
                f,
                "record {recorded} (seq {seq}): stored bytes hash to {actual}; the value was altered"
            ),
            Self::Undecodable {
                seq,
                recorded,
                error,
            } => match recorded {
                Some(id) => write!(f, "record {id} (seq {seq}): cannot decode: {error}"),
                None => write!(f, "seq {seq}: cannot decode: {error}"),
            },
            Self::IdIndexMismatch {
                seq,
                id,
                indexed_seq,
            } => match indexed_seq {
                Some(other) => write!(f, "record {id} (seq {seq}): id index points at seq {other}"),
                None => write!(f, "record {id} (seq {seq}): missing from the id index"),
            },
            Self::BadParent {
                seq,
                id,
                parent,
                parent_seq,
            } => match parent_seq {
                Some(p) => write!(
                    f,
                    "record {id} (seq {seq}): parent {parent} is at seq {p}, not before it"
                ),
                None => write!(
                    f,
                    "record {id} (seq {seq}): parent {parent} is not in the log"
                ),
            },
            Self::SequenceGap { expected, found } => {
                write!(f, "sequence gap: expected seq {expected}, found {found}")
            }
            Self::IndexSize { records, indexed } => {
                write!(f, "id index holds {indexed} entries for {records} records")
            }
            Self::ModelCallIndexMismatch {
                seq,
                id,
                request_hash,
                indexed_seq,
            } => match indexed_seq {
                Some(other) => write!(
                    f,
                    "model call {id} (seq {seq}): model-call index points request {request_hash} at seq {other}"
                ),
                None => write!(
                    f,
                    "model call {id} (seq {seq}): request {request_hash} is missing from the model-call index"
                ),
            },
            Self::Unreadable {
                keyspace,
                records,
                error,
            } => {
                write!(f, "keyspace `{keyspace}` has unreadable entries ({error})")?;
                if !records.is_empty() {
                    let runs: Vec<String> = records
                        .iter()
                        .map(|(a, b)| {
                            if a == b {
                                format!("{a}")
                            } else {
                                format!("{a}..={b}")
                            }
                        })
                        .collect();
                    write!(f, "; records at sequence {} are affected", runs.join(", "))?;
                }
                Ok(())
            }
            Self::ModelCallIndexSize { requests, indexed } => write!(
                f,
                "model-call index holds {indexed} entries for {requests} distinct requests"
            ),
            Self::IndexDigestMismatch {
                keyspace,
                stored_entries,
                stored,
                rebuilt_entries,
                rebuilt,
            } => write!(
                f,
                "index `{keyspace}` differs from a rebuild from the records: {stored_entries} entries with digest {stored}, the rebuild has {rebuilt_entries} with digest {rebuilt}"
            ),
            Self::IncompleteImport { source } => write!(
                f,
                "an import parquet of {source} into this directory did not finish: it holds only part of the export (import it again)"
            ),
        }
    }
}

/// What audit checked and found.
#[derive(Clone, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct AuditReport {
    /// Records checked.
    pub records: u64,
    /// Parent links checked.
    pub parent_links: u64,
    /// Problems, in log order.
    pub problems: Vec<AuditProblem>,
    /// Each index keyspace as stored: entries and digest.
    pub indexes: Vec<IndexCheck>,
}

/// One index keyspace as `audit` found it.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct IndexCheck {
    /// Keyspace.
    pub keyspace: &'static str,
    /// Entries stored.
    pub entries: u64,
    /// Order-independent digest of the entries ([`IndexDigest`]).
    pub digest: String,
    /// Whether it equals the rebuild from the records (`None`: not
    /// compared, a record could not be read back).
    pub equals_rebuild: Option<bool>,
}

impl AuditReport {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// How a pass of [`Store::audit`] checks that the indexes point at each
/// record and that each parent comes before its child.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum IdChecks {
    /// By the index digests and sorted runs of parent links, without a
    /// point lookup per record: a clean verdict only (any problem sends
    /// the audit to [`IdChecks::PerRecord`], which names it).
    ByDigest,
    /// A lookup per record and per parent link: names each problem, in
    /// log order.
    PerRecord,
}

/// Parent links the [`IdChecks::ByDigest`] pass holds before it sorts them
/// and checks them in one pass over the id index (72 bytes each: at most
/// 72 MiB).
const PARENT_LINKS_PER_RUN: usize = 1 << 20;

/// One parent link of a record the index stage has indexed: the parent's
/// id, the child's sequence and the child's id.
type ParentLink = (RecordId, u64, RecordId);

impl Store {
    /// Checks the whole log (O(records + parent links)).
    ///
    /// A first pass compares every index keyspace's digest with a rebuild
    /// from the records and checks the parent links in sorted runs against
    /// the id index, with no point lookup per record (which, on a large
    /// store, re-read index blocks the scan of the records has evicted
    /// from the cache). Equal digests mean each record's kind entry holds
    /// the id its bytes hash to and its id entry its sequence. When that
    /// pass finds anything wrong, a second pass checks record by record
    /// and names each problem, in log order.
    pub fn audit(&self) -> Result<AuditReport, StoreError> {
        let report = self.audit_pass(IdChecks::ByDigest, PARENT_LINKS_PER_RUN)?;
        if report.is_clean() {
            return Ok(report);
        }
        self.audit_pass(IdChecks::PerRecord, PARENT_LINKS_PER_RUN)
    }

    /// One pass of [`Store::audit`]; the [`IdChecks::ByDigest`] pass checks
    /// parent links in sorted runs of `links_per_run`.
    fn audit_pass(
        &self,
        checks: IdChecks,
        links_per_run: usize,
    ) -> Result<AuditReport, StoreError> {
        let mut report = AuditReport::default();
        let mut expected = 1u64;
        // First sequence of each request hash among the model calls.
        let mut first_calls: HashMap<Digest, u64> = HashMap::new();
        // The indexes as a rebuild from the records makes them.
        let mut rebuild = Rebuild::default();
        let watermark = self.caught_up_watermark()?;
        // An altered or undecodable record (reported above) cannot be
        // rebuilt: the digests are then not compared.
        let mut comparable = true;
        let mut links: Vec<ParentLink> = Vec::new();
        for item in self.scan_raw(1) {
            let (seq, bytes) = item?;
            report.records += 1;
            if seq != expected {
                report.problems.push(AuditProblem::SequenceGap {
                    expected,
                    found: seq,
                });
            }
            expected = seq + 1;
            // The indexed records' ids are checked by the digests.
            let by_digest = checks == IdChecks::ByDigest && seq <= watermark;
            let actual = id_of(&bytes);
            let recorded = if by_digest {
                None
            } else {
                match peek_kind(&bytes) {
                    Ok(kind) => self.indexed_id(kind, seq)?,
                    Err(_) => self.recorded_id_any_kind(seq)?,
                }
            };
            if let Some(recorded) = recorded
                && recorded != actual
            {
                report.problems.push(AuditProblem::HashMismatch {
                    seq,
                    recorded,
                    actual,
                });
                comparable = false;
                continue;
            }
            let record = match decode(&bytes) {
                Ok(r) => r,
                Err(e) => {
                    report.problems.push(AuditProblem::Undecodable {
                        seq,
                        recorded,
                        error: e.to_string(),
                    });
                    comparable = false;
                    continue;
                }
            };
            if seq <= watermark {
                rebuild.add(seq, &actual, &record);
            }
            if !by_digest {
                let indexed_seq = self.seq_of(&actual)?;
                if indexed_seq != Some(seq) {
                    report.problems.push(AuditProblem::IdIndexMismatch {
                        seq,
                        id: actual,
                        indexed_seq,
                    });
                }
            }
            if let Record::ModelCall(call) = &record
                && let Entry::Vacant(first) = first_calls.entry(call.request_hash)
            {
                first.insert(seq);
                let indexed_seq = self.model_call_seq(&call.request_hash)?;
                if indexed_seq != Some(seq) {
                    report.problems.push(AuditProblem::ModelCallIndexMismatch {
                        seq,
                        id: actual,
                        request_hash: call.request_hash,
                        indexed_seq,
                    });
                }
            }
            for parent in record.parents() {
                report.parent_links += 1;
                if by_digest {
                    links.push((parent, seq, actual));
                    if links.len() >= links_per_run {
                        self.check_parent_run(&mut links, &mut report)?;
                    }
                    continue;
                }
                let parent_seq = self.seq_of(&parent)?;
                if parent_seq.is_none_or(|p| p >= seq) {
                    report.problems.push(AuditProblem::BadParent {
                        seq,
                        id: actual,
                        parent,
                        parent_seq,
                    });
                }
            }
        }
        self.check_parent_run(&mut links, &mut report)?;
        let indexed = u64::try_from(self.id_index_len()?).unwrap_or(u64::MAX);
        if indexed != report.records {
            report.problems.push(AuditProblem::IndexSize {
                records: report.records,
                indexed,
            });
        }
        let requests = u64::try_from(first_calls.len()).unwrap_or(u64::MAX);
        let indexed = u64::try_from(self.model_call_index_len()?).unwrap_or(u64::MAX);
        if indexed != requests {
            report
                .problems
                .push(AuditProblem::ModelCallIndexSize { requests, indexed });
        }
        for (keyspace, rebuilt) in INDEX_KEYSPACES.into_iter().zip(rebuild.digests) {
            let stored = self.index_digest(keyspace)?;
            let equal = comparable.then_some(stored == rebuilt);
            if equal == Some(false) {
                report.problems.push(AuditProblem::IndexDigestMismatch {
                    keyspace,
                    stored_entries: stored.entries,
                    stored: stored.to_hex(),
                    rebuilt_entries: rebuilt.entries,
                    rebuilt: rebuilt.to_hex(),
                });
            }
            report.indexes.push(IndexCheck {
                keyspace,
                entries: stored.entries,
                digest: stored.to_hex(),
                equals_rebuild: equal,
            });
        }
        if let Some(source) = self.config(IMPORT_INCOMPLETE_CONFIG)? {
            report
                .problems
                .push(AuditProblem::IncompleteImport { source });
        }
        Ok(report)
    }

    /// Checks a run of parent links against the id index in one ordered
    /// pass (the run sorted by parent id first), then empties it: each
    /// parent must be indexed at a sequence before its child's. A link that
    /// fails is a [`AuditProblem::BadParent`] (in parent id order: the
    /// per-record pass that follows any problem puts them in log order).
    fn check_parent_run(
        &self,
        links: &mut Vec<ParentLink>,
        report: &mut AuditReport,
    ) -> Result<(), StoreError> {
        links.sort_unstable();
        let Some(&(first, _, _)) = links.first() else {
            return Ok(());
        };
        let mut indexed = self.indexed_ids_from(&first).fuse();
        let mut current: Option<(RecordId, u64)> = None;
        for (parent, child_seq, child) in links.drain(..) {
            while current.is_none_or(|(id, _)| id < parent) {
                match indexed.next() {
                    None => break,
                    Some(Ok(entry)) => current = Some(entry),
                    // A malformed entry differs from the rebuild, so the
                    // digest comparison reports the id index.
                    Some(Err(StoreError::Corrupt { .. })) => {}
                    Some(Err(e)) => return Err(e),
                }
            }
            let parent_seq = current.filter(|(id, _)| *id == parent).map(|(_, seq)| seq);
            if parent_seq.is_none_or(|p| p >= child_seq) {
                report.problems.push(AuditProblem::BadParent {
                    seq: child_seq,
                    id: child,
                    parent,
                    parent_seq,
                });
            }
        }
        Ok(())
    }

    /// `audit --deep`: reads every entry of every keyspace (the storage
    /// engine checks each block's checksum as it reads it), then audits the
    /// log. An unreadable records entry is reported with the sequence
    /// numbers affected; the log audit is then skipped (it would stop at
    /// the same block).
    pub fn audit_deep(&self) -> Result<AuditReport, StoreError> {
        let mut problems = Vec::new();
        for (name, keyspace) in self.keyspaces() {
            let mut failure = None;
            for item in keyspace.iter() {
                if let Err(e) = item.into_inner() {
                    failure = Some(e.to_string());
                    break;
                }
            }
            let Some(error) = failure else { continue };
            let records = if name == crate::keys::RECORDS {
                self.unreadable_records()
            } else {
                Vec::new()
            };
            problems.push(AuditProblem::Unreadable {
                keyspace: name,
                records,
                error,
            });
        }
        if problems.iter().any(|p| {
            matches!(p, AuditProblem::Unreadable { keyspace, .. } if *keyspace == crate::keys::RECORDS)
        }) {
            return Ok(AuditReport {
                problems,
                ..AuditReport::default()
            });
        }
        let mut report = self.audit()?;
        problems.append(&mut report.problems);
        report.problems = problems;
        Ok(report)
    }

    /// The sequence numbers whose record cannot be read, as inclusive runs
    /// (point reads up to the last sequence the kind counters account for).
    fn unreadable_records(&self) -> Vec<(u64, u64)> {
        let last: u64 = RecordKind::ALL
            .iter()
            // Run only once a keyspace read failed: a counter that cannot
            // be read narrows the scan instead of stopping the report.
            .map(|k| self.count(*k).unwrap_or(0))
            .sum();
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for seq in 1..=last {
            if self.raw_value(seq).is_err() {
                match runs.last_mut() {
                    Some(run) if run.1 + 1 == seq => run.1 = seq,
                    _ => runs.push((seq, seq)),
                }
            }
        }
        runs
    }

    /// The digest of an index keyspace's stored entries.
    fn index_digest(&self, name: &str) -> Result<IndexDigest, StoreError> {
        let mut digest = IndexDigest::default();
        for (ks_name, keyspace) in self.keyspaces() {
            if ks_name != name {
                continue;
            }
            for item in keyspace.iter() {
                let (k, v) = item.into_inner().map_err(|e| self.storage_error(e))?;
                digest.add(&k, &v);
            }
        }
        Ok(digest)
    }

    /// The kind index entry for a sequence whose header is unreadable.
    fn recorded_id_any_kind(&self, seq: u64) -> Result<Option<RecordId>, StoreError> {
        for kind in RecordKind::ALL {
            if let Some(id) = self.indexed_id(kind, seq)? {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::Durability;
    use crate::record::{Block, Message, Role};
    use crate::time::SourceTime;

    fn message(thread: &str, position: u64) -> Message {
        Message {
            tenant: String::new(),
            thread: thread.into(),
            external_id: format!("{thread}-{position}"),
            position,
            role: Role::User,
            speaker: None,
            content: format!("turn {position} of {thread}"),
            tool_calls: vec![],
            time: SourceTime::utc_without_offset(1_700_000_000_000),
        }
    }

    /// Three threads of four messages, each sealed into two blocks: 18
    /// records, 12 parent links. Returns the store and the ids in log order.
    fn filled(dir: &std::path::Path) -> (Store, Vec<RecordId>) {
        let store = Store::open(dir).unwrap();
        let mut records = Vec::new();
        for thread in ["a", "b", "c"] {
            let messages: Vec<Message> = (0..4).map(|p| message(thread, p)).collect();
            for (ordinal, pair) in messages.chunks(2).enumerate() {
                records.extend(pair.iter().cloned().map(Record::Message));
                let ordinal = u32::try_from(ordinal).unwrap() + 1;
                records.push(Record::Block(Block {
                    tenant: String::new(),
                    thread: thread.into(),
                    ordinal,
                    start_turn: ordinal,
                    end_turn: ordinal,
                    first_position: pair[0].position,
                    last_position: pair[1].position,
                    messages: pair
                        .iter()
                        .map(|m| crate::envelope::encode_with_id(&Record::Message(m.clone())))
                        .map(|encoded| encoded.unwrap().0)
                        .collect(),
                    time: pair[1].time,
                    l4: String::new(),
                    l3: String::new(),
                }));
            }
        }
        let receipt = store.append(&records, Durability::Sync).unwrap();
        let ids = receipt.records.iter().map(|r| r.id).collect();
        (store, ids)
    }

    #[test]
    fn the_digest_pass_reports_what_the_per_record_pass_reports_on_an_intact_log() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = filled(dir.path());
        let exact = store.audit_pass(IdChecks::PerRecord, 1).unwrap();
        assert!(exact.is_clean(), "{:?}", exact.problems);
        assert_eq!((exact.records, exact.parent_links), (18, 12));
        // Runs of 1, 5 (the last one short) and all 12 links.
        for per_run in [1, 5, PARENT_LINKS_PER_RUN] {
            let report = store.audit_pass(IdChecks::ByDigest, per_run).unwrap();
            assert_eq!(report, exact, "runs of {per_run}");
        }
        assert_eq!(store.audit().unwrap(), exact);
    }

    #[test]
    fn a_parent_run_names_a_parent_missing_or_not_before_its_child() {
        let dir = tempfile::tempdir().unwrap();
        let (store, ids) = filled(dir.path());
        store.caught_up_watermark().unwrap();
        // ids[2] is the first block (seq 3), whose parents are seqs 1 and 2;
        // ids[5] the second (seq 6).
        let child = ids[5];
        let mut report = AuditReport::default();
        let mut run = vec![
            (ids[0], 3, ids[2]),
            (ids[1], 3, ids[2]),
            (ids[3], 18, child),
        ];
        store.check_parent_run(&mut run, &mut report).unwrap();
        assert!(report.is_clean(), "{:?}", report.problems);
        assert!(run.is_empty(), "a checked run is emptied");
        let unknown = RecordId([0xff; 32]);
        let first = RecordId([0; 32]);
        for (bad, parent_seq) in [
            ((ids[4], 5), Some(5)),
            ((ids[4], 4), Some(5)),
            ((unknown, 18), None),
            ((first, 18), None),
        ] {
            let mut report = AuditReport::default();
            let mut run = vec![
                (ids[0], 3, ids[2]),
                (bad.0, bad.1, child),
                (ids[1], 3, ids[2]),
            ];
            store.check_parent_run(&mut run, &mut report).unwrap();
            assert_eq!(
                report.problems,
                vec![AuditProblem::BadParent {
                    seq: bad.1,
                    id: child,
                    parent: bad.0,
                    parent_seq,
                }],
                "{bad:?}"
            );
        }
    }
}
