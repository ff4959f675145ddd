//! `recover`: copy every intact record of a damaged data directory, in
//! sequence order, into a new one, and say what was lost.
//!
//! The damaged directory is never written: its journals are read with the
//! integrity module's own reader (which also finds the whole batches after
//! a damaged one), and its tables are read from a scratch copy that fjall
//! opens without journals. A record is copied when its envelope decodes,
//! its hash equals the id the kind index recorded for its sequence (when an
//! index entry survives), and it can be appended: its parents were copied
//! and, for a message or block, the thread's earlier ones were. Indexes and
//! thread heads are rebuilt by the appends; views are rebuilt by the
//! caller.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::envelope::{decode, id_of, peek_kind};
use crate::error::StoreError;
use crate::id::RecordId;
use crate::integrity::journal;
use crate::integrity::manifest::Manifest;
use crate::keys;
use crate::record::{Record, RecordKind};
use crate::store::{Durability, Store};

/// Records appended per batch of the new store.
const BATCH: usize = 2048;

/// Why a record was not copied.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReason {
    /// Its sequence number is in neither the tables nor the journals.
    Missing,
    /// It is stored but cannot be read (a damaged table block).
    Unreadable,
    /// Its bytes do not decode.
    Undecodable,
    /// Its bytes no longer hash to the id recorded for it.
    Altered,
    /// It cites a record that was lost.
    ParentLost,
    /// An earlier message or block of its thread was lost.
    ThreadBroken,
}

impl LossReason {
    /// A short description.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Missing => "missing from the tables and journals",
            Self::Unreadable => "unreadable (damaged table block)",
            Self::Undecodable => "does not decode",
            Self::Altered => "altered (hash differs from its recorded id)",
            Self::ParentLost => "cites a lost record",
            Self::ThreadBroken => "follows a lost message or block of its thread",
        }
    }
}

/// A run of lost sequence numbers with one reason (and kind, when known).
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct LostRange {
    /// First sequence.
    pub from: u64,
    /// Last sequence (inclusive).
    pub to: u64,
    /// Why.
    pub reason: LossReason,
    /// Kind of the records, when every one of the run is known to be it.
    pub kind: Option<&'static str>,
}

/// Per kind: what the damaged directory's last commit recorded and what was copied.
#[derive(Clone, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct KindRecovery {
    /// Records the manifest recorded (None: no manifest).
    pub expected: Option<u64>,
    /// Records copied.
    pub recovered: u64,
    /// Records found but not copied.
    pub lost_found: u64,
}

/// What `recover` did.
#[derive(Clone, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct RecoveryReport {
    /// The damaged directory.
    pub from: PathBuf,
    /// The new directory.
    pub to: PathBuf,
    /// Last sequence the damaged directory's manifest recorded.
    pub expected_last_seq: Option<u64>,
    /// Highest sequence found in its tables or journals.
    pub found_last_seq: u64,
    /// Records copied.
    pub recovered: u64,
    /// Records lost (every sequence up to the highest known that was not copied).
    pub lost: u64,
    /// Lost sequence ranges.
    pub lost_ranges: Vec<LostRange>,
    /// Per kind name.
    pub kinds: BTreeMap<&'static str, KindRecovery>,
    /// Journal batches read whole, and the damage found in journals.
    pub journal_batches: u64,
    /// Damage found in journals (file and what).
    pub journal_damage: Vec<String>,
    /// Configuration values copied.
    pub configs: u64,
}

/// Error of `recover`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecoverError {
    /// The target exists and is not empty.
    #[error("{} already exists and is not empty: recover writes into a new directory", path.display())]
    TargetExists {
        /// The target.
        path: PathBuf,
    },
    /// The target lies inside the damaged directory, or is it.
    #[error("the new directory {} must not be inside the damaged one {}", to.display(), from.display())]
    TargetInside {
        /// The damaged directory.
        from: PathBuf,
        /// The target.
        to: PathBuf,
    },
    /// The source holds no store.
    #[error("{} is not a strataflow data directory", path.display())]
    NotAStore {
        /// The directory.
        path: PathBuf,
    },
    /// Reading the damaged directory or writing the new one failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The new store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> RecoverError + '_ {
    move |source| RecoverError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Copies `from` without its journals and lock into `to` (a scratch copy
/// fjall may open and change).
fn copy_tables(from: &Path, to: &Path) -> Result<(), RecoverError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let name = entry.file_name();
        let name_s = name.to_string_lossy();
        if name_s.ends_with(".jnl") {
            continue;
        }
        if name_s == "lock" {
            // fjall opens its lock file; a fresh one holds no lock.
            std::fs::File::create(to.join(&name)).map_err(io(to))?;
            continue;
        }
        let src = entry.path();
        let dst = to.join(&name);
        if src.is_dir() {
            copy_tables(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(io(&src))?;
        }
    }
    Ok(())
}

/// What the journals hold for the records, kind and meta keyspaces.
#[derive(Default)]
struct JournalSalvage {
    records: BTreeMap<u64, Vec<u8>>,
    kinds: BTreeMap<Vec<u8>, Vec<u8>>,
    configs: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    batches: u64,
    damage: Vec<String>,
}

fn salvage_journals(
    from: &Path,
    (records_ks, kinds_ks, meta_ks): (u64, u64, u64),
) -> Result<JournalSalvage, RecoverError> {
    let mut out = JournalSalvage::default();
    for file in journal::files(from).map_err(io(from))? {
        let scan = journal::scan(&file, true).map_err(io(&file))?;
        out.batches += scan.valid_batches;
        if let journal::JournalEnd::Damaged { offset, detail } = &scan.end {
            out.damage.push(format!(
                "{} at byte {offset}: {detail}",
                file.file_name().unwrap_or_default().to_string_lossy()
            ));
        }
        for batch in scan.batches {
            for item in batch.items {
                if item.keyspace == records_ks && item.insert {
                    if let Some(seq) = keys::decode_seq(&item.key) {
                        out.records.insert(seq, item.value);
                    }
                } else if item.keyspace == kinds_ks && item.insert {
                    out.kinds.insert(item.key, item.value);
                } else if item.keyspace == meta_ks && item.key.starts_with(b"config/") {
                    out.configs
                        .insert(item.key, item.insert.then_some(item.value));
                }
            }
        }
    }
    Ok(out)
}

/// Recovers `from` into the new directory `to` (see the module docs).
pub fn recover(from: &Path, to: &Path) -> Result<RecoveryReport, RecoverError> {
    if !crate::integrity::looks_like_store(from) {
        return Err(RecoverError::NotAStore {
            path: from.to_path_buf(),
        });
    }
    let from_abs = std::fs::canonicalize(from).map_err(io(from))?;
    let to_parent = to
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let to_abs = std::fs::canonicalize(to_parent)
        .map_err(io(to_parent))?
        .join(to.file_name().unwrap_or_default());
    if to_abs.starts_with(&from_abs) {
        return Err(RecoverError::TargetInside {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        });
    }
    if to.exists() && std::fs::read_dir(to).map_err(io(to))?.next().is_some() {
        return Err(RecoverError::TargetExists {
            path: to.to_path_buf(),
        });
    }
    // The directory is damaged: a manifest that cannot be read only loses
    // its last sequence as a bound of what to look for.
    let manifest = Manifest::load(from).ok().flatten();
    let mut scratch_name = to.as_os_str().to_owned();
    scratch_name.push(".recover-scratch");
    let scratch = PathBuf::from(scratch_name);
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).map_err(io(&scratch))?;
    }
    copy_tables(from, &scratch)?;
    let result = recover_with(from, to, &scratch, manifest.as_ref());
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn recover_with(
    from: &Path,
    to: &Path,
    scratch: &Path,
    manifest: Option<&Manifest>,
) -> Result<RecoveryReport, RecoverError> {
    let tables = Store::open_engine(scratch.to_path_buf(), true)?;
    // The manifest's keyspace ids are the damaged directory's own; the
    // scratch copy's are the same unless fjall's keyspace map was lost.
    let engine = tables.engine_ids();
    let ids = match manifest {
        Some(m) => (
            m.keyspaces.get(keys::RECORDS).copied().unwrap_or(engine.0),
            m.keyspaces.get(keys::KINDS).copied().unwrap_or(engine.1),
            m.keyspaces.get(keys::META).copied().unwrap_or(engine.2),
        ),
        None => engine,
    };
    let journals = salvage_journals(from, ids)?;
    let target = Store::open(to)?;

    let mut report = RecoveryReport {
        from: from.to_path_buf(),
        to: to.to_path_buf(),
        expected_last_seq: manifest.map(|m| m.last_seq),
        journal_batches: journals.batches,
        journal_damage: journals.damage.clone(),
        ..RecoveryReport::default()
    };
    if let Some(m) = manifest {
        for kind in RecordKind::ALL {
            report.kinds.entry(kind.name()).or_default().expected =
                Some(m.counts.get(kind.name()).copied().unwrap_or(0));
        }
    }

    // Configuration (block size, profiles): the tables' values, then the
    // journals' later writes.
    // Tables that cannot be read lose their configuration values (the
    // journals' are still kept); records are what recover must save.
    let mut configs: BTreeMap<String, Option<String>> = tables
        .configs_with_prefix("")
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, Some(v)))
        .collect();
    for (key, value) in &journals.configs {
        let name = String::from_utf8_lossy(key.get(b"config/".len()..).unwrap_or_default());
        configs.insert(
            name.into_owned(),
            value
                .as_ref()
                .map(|v| String::from_utf8_lossy(v).into_owned()),
        );
    }
    for (name, value) in &configs {
        if let Some(value) = value {
            target.set_config(name, value)?;
            report.configs += 1;
        }
    }

    // Unreadable tables: the journals and the manifest still bound the scan.
    let table_last = tables.last_seq().ok().flatten().unwrap_or(0);
    let journal_last = journals.records.keys().next_back().copied().unwrap_or(0);
    let last = table_last
        .max(journal_last)
        .max(manifest.map_or(0, |m| m.last_seq));
    report.found_last_seq = table_last.max(journal_last);

    let mut losses: Vec<(u64, LossReason, Option<RecordKind>)> = Vec::new();
    let mut pending: Vec<(u64, Record)> = Vec::with_capacity(BATCH);
    for seq in 1..=last {
        let bytes = match journals.records.get(&seq) {
            Some(b) => Some(b.clone()),
            None => match tables.raw_value(seq) {
                Ok(b) => b,
                Err(_) => {
                    losses.push((seq, LossReason::Unreadable, None));
                    continue;
                }
            },
        };
        let Some(bytes) = bytes else {
            losses.push((seq, LossReason::Missing, None));
            continue;
        };
        let kind = peek_kind(&bytes).ok();
        let record = match decode(&bytes) {
            Ok(r) => r,
            Err(_) => {
                losses.push((seq, LossReason::Undecodable, kind));
                continue;
            }
        };
        let id = id_of(&bytes);
        let key = keys::kind_key(record.kind(), seq);
        let recorded = match journals.kinds.get(key.as_slice()) {
            Some(v) => RecordId::from_slice(v),
            None => tables.indexed_id(record.kind(), seq).ok().flatten(),
        };
        if recorded.is_some_and(|r| r != id) {
            losses.push((seq, LossReason::Altered, Some(record.kind())));
            continue;
        }
        pending.push((seq, record));
        if pending.len() >= BATCH {
            append_all(&target, &mut pending, &mut losses, &mut report)?;
        }
    }
    append_all(&target, &mut pending, &mut losses, &mut report)?;
    // One fsync for the whole copy, through a sync commit of its config.
    target.set_config("recovered_from", &from.display().to_string())?;

    report.lost = losses.len() as u64;
    for (_, _, kind) in &losses {
        if let Some(kind) = kind {
            report.kinds.entry(kind.name()).or_default().lost_found += 1;
        }
    }
    report.lost_ranges = ranges(&losses);
    Ok(report)
}

/// Appends the pending records in one batch; when the batch is refused,
/// one by one, noting each refusal as a loss.
fn append_all(
    target: &Store,
    pending: &mut Vec<(u64, Record)>,
    losses: &mut Vec<(u64, LossReason, Option<RecordKind>)>,
    report: &mut RecoveryReport,
) -> Result<(), RecoverError> {
    if pending.is_empty() {
        return Ok(());
    }
    let records: Vec<Record> = pending.iter().map(|(_, r)| r.clone()).collect();
    match target.append(&records, Durability::Buffered) {
        Ok(receipt) => {
            for (_, r) in pending.iter() {
                report.kinds.entry(r.kind().name()).or_default().recovered += 1;
            }
            report.recovered += receipt.records.len() as u64;
        }
        Err(_) => {
            for (seq, record) in pending.iter() {
                match target.append(std::slice::from_ref(record), Durability::Buffered) {
                    Ok(_) => {
                        report
                            .kinds
                            .entry(record.kind().name())
                            .or_default()
                            .recovered += 1;
                        report.recovered += 1;
                    }
                    Err(StoreError::MissingParent { .. }) => {
                        losses.push((*seq, LossReason::ParentLost, Some(record.kind())));
                    }
                    Err(StoreError::ThreadOrder { .. }) => {
                        losses.push((*seq, LossReason::ThreadBroken, Some(record.kind())));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    pending.clear();
    Ok(())
}

/// Runs of consecutive lost sequences with one reason.
fn ranges(losses: &[(u64, LossReason, Option<RecordKind>)]) -> Vec<LostRange> {
    let mut out: Vec<LostRange> = Vec::new();
    for (seq, reason, kind) in losses {
        let kind = kind.map(RecordKind::name);
        if let Some(last) = out.last_mut()
            && last.to + 1 == *seq
            && last.reason == *reason
        {
            last.to = *seq;
            if last.kind != kind {
                last.kind = None;
            }
            continue;
        }
        out.push(LostRange {
            from: *seq,
            to: *seq,
            reason: *reason,
            kind,
        });
    }
    out
}
