//! Integrity of a data directory: what is checked before and after fjall
//! opens it, so that a damaged directory is refused instead of opening as
//! a shorter (or empty) store that a later write would make permanent.
//!
//! - Before fjall opens (holding the directory's lock): every journal is
//!   read and its batches' checksums verified (`journal`); every live
//!   table's checksum is verified when the table is new or changed
//!   (`tables`); fjall's `version` file must exist when keyspaces do.
//! - After: the records keyspace's first and last sequence, the kind
//!   counters and the id and kind index entries of the last record agree
//!   with each other and with the manifest the last commit wrote
//!   (`manifest`).
//!
//! Any disagreement is a [`Damage`], reported by `Store::open` as
//! `StoreError::Damaged` (exit 4 in the CLI), which points at
//! `strataflow recover`.

pub(crate) mod journal;
pub(crate) mod manifest;
pub(crate) mod tables;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::id::RecordId;

/// What is damaged in a data directory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Damage {
    /// A journal batch fails its checksum or cannot be read, with data after it.
    #[error("journal {} is damaged at byte {offset}: {detail}", file.display())]
    Journal {
        /// The journal file.
        file: PathBuf,
        /// Offset of the damage.
        offset: u64,
        /// What is wrong.
        detail: JournalProblem,
    },
    /// A table (or version) file of the storage engine does not match its
    /// recorded checksum, is missing, or cannot be read.
    #[error("table file {file} {detail}")]
    Table {
        /// The file, relative to the data directory.
        file: String,
        /// What is wrong.
        detail: TableProblem,
    },
    /// The storage engine's own `version` file is missing.
    #[error("the storage engine's `version` file is missing although keyspaces exist")]
    EngineVersionMissing,
    /// The storage engine refused to open the directory. The text is
    /// fjall's own message: its error is opaque to a caller (nothing to
    /// branch on beyond "the engine refused") and not `Clone`/`Eq` as a
    /// `Damage` is.
    #[error("the storage engine cannot open it: {0}")]
    Engine(String),
    /// The log holds fewer records than its last commit wrote.
    #[error(
        "the log ends at sequence {found} but its last commit recorded {expected} records: records {}..={expected} are missing",
        found + 1
    )]
    MissingRecords {
        /// Last sequence found.
        found: u64,
        /// Last sequence the manifest recorded.
        expected: u64,
    },
    /// The records keyspace does not start at sequence 1.
    #[error("the log starts at sequence {first}, not 1: records 1..{first} are missing")]
    MissingHead {
        /// First sequence found.
        first: u64,
    },
    /// Counters, indexes and records disagree.
    #[error("{0}")]
    Inconsistent(Inconsistency),
    /// The manifest cannot be read.
    #[error("{0}")]
    Manifest(ManifestDamage),
}

/// What is wrong with a journal ([`Damage::Journal`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JournalProblem {
    /// The journal folder cannot be listed.
    #[error("journals cannot be listed: {message}")]
    Unlistable {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's text (`std::io::Error` is not `Clone`).
        message: String,
    },
    /// The journal file cannot be read.
    #[error("cannot be read: {message}")]
    Unreadable {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's text.
        message: String,
    },
    /// A batch is bad and whole batches follow it (so it is no torn write).
    #[error("{error} (batch at byte {batch_at}; {later_batches} whole batch(es) follow)")]
    Batch {
        /// What is wrong in the batch.
        error: journal::EntryError,
        /// Offset of the batch.
        batch_at: u64,
        /// Whole batches found after it.
        later_batches: u64,
    },
}

/// What is wrong with a table or version file ([`Damage::Table`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableProblem {
    /// The file (or folder) cannot be read.
    #[error("cannot be read: {message}")]
    Unreadable {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's text (`std::io::Error` is not `Clone`).
        message: String,
    },
    /// The folder cannot be listed.
    #[error("cannot be listed: {message}")]
    Unlistable {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's text.
        message: String,
    },
    /// The keyspace's `current` file has the wrong length.
    #[error("is {len} bytes, not 25")]
    CurrentLength {
        /// Its length.
        len: usize,
    },
    /// The version file does not match the checksum in `current`.
    #[error("does not match the checksum recorded in `current`")]
    VersionChecksum,
    /// The version file's container cannot be read. The text is the sfa
    /// reader's own (debug) message: its error is foreign and opaque.
    #[error("{0}")]
    VersionFormat(String),
    /// The version file has no `tables` section.
    #[error("has no `tables` section")]
    NoTablesSection,
    /// The version file's `tables` section cannot be read.
    #[error("tables section: {message}")]
    TablesSection {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's text.
        message: String,
    },
    /// A table entry has a checksum type this build does not know.
    #[error("unknown table checksum type")]
    ChecksumType,
    /// A table the version lists is absent.
    #[error("is missing (the keyspace's version lists it)")]
    Missing,
    /// A table does not match its checksum.
    #[error("does not match the checksum recorded when it was written")]
    Checksum,
}

impl TableProblem {
    fn unreadable(e: &std::io::Error) -> Self {
        Self::Unreadable {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

/// How the log's counters, indexes and records disagree (found by
/// `Store::open`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Inconsistency {
    /// The per-kind counters do not add up to the log's last sequence.
    #[error("the kind counters add up to {total} records but the log holds 1..={last}")]
    KindCounters {
        /// Sum of the counters.
        total: u64,
        /// The log's last sequence.
        last: u64,
    },
    /// The last sequence has no value in the records keyspace.
    #[error("the records keyspace has no value at its last sequence {seq}")]
    LastRecordMissing {
        /// The last sequence.
        seq: u64,
    },
    /// The id index does not hold the last record.
    #[error("the id index lacks the last record ({id} at sequence {seq})")]
    IdIndex {
        /// The last record's id.
        id: RecordId,
        /// Its sequence.
        seq: u64,
    },
    /// The index watermark is past the last record: records were lost
    /// under their index entries.
    #[error("the indexes cover records up to sequence {watermark} but the log holds 1..={last}")]
    IndexAhead {
        /// The stored watermark.
        watermark: u64,
        /// The log's last sequence.
        last: u64,
    },
    /// The kind index does not hold the last record.
    #[error("the kind index lacks the last record ({kind} {id} at sequence {seq})")]
    KindIndex {
        /// The last record's kind.
        kind: &'static str,
        /// Its id.
        id: RecordId,
        /// Its sequence.
        seq: u64,
    },
}

/// Why the manifest (`strataflow.manifest`) cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestDamage {
    /// The file exists but cannot be read.
    #[error("{file} cannot be read: {message}", file = manifest::FILE)]
    Unreadable {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's text (`std::io::Error` is not `Clone`).
        message: String,
    },
    /// The file is not a manifest's JSON.
    #[error("{file} is not valid: {message}", file = manifest::FILE)]
    Invalid {
        /// 1-based line of the error (0 when at the end of the input).
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's message.
        message: String,
    },
    /// A layout this build does not read.
    #[error("{file} has layout {found}, this build reads layout {supported}", file = manifest::FILE)]
    Layout {
        /// Layout found.
        found: u32,
        /// Layout this build reads.
        supported: u32,
    },
}

/// Writes a small file atomically: a temporary file renamed over it.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
    }
    std::fs::rename(&tmp, path)
}

/// How much to check of the tables before opening.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum TableCheck {
    /// Hash tables that are new or changed since last verified (every open).
    #[default]
    Changed,
    /// Hash every table (`audit --deep`).
    All,
}

/// Whether the directory holds anything of a store (fjall's files or ours).
pub fn looks_like_store(dir: &Path) -> bool {
    ["keyspaces", "version", manifest::FILE]
        .iter()
        .any(|f| dir.join(f).exists())
        || journal::files(dir).is_ok_and(|f| !f.is_empty())
}

/// The checks made before fjall opens a directory (which must not be open
/// elsewhere: the caller holds its lock). Returns how many tables were hashed.
pub(crate) fn check_files(dir: &Path, tables_check: TableCheck) -> Result<usize, Damage> {
    check_journals(dir)?;
    check_tables(dir, tables_check)
}

/// The tables' part of [`check_files`].
pub(crate) fn check_tables(dir: &Path, tables_check: TableCheck) -> Result<usize, Damage> {
    tables::check(dir, tables_check == TableCheck::All).map_err(|d| Damage::Table {
        file: d.file,
        detail: d.detail,
    })
}

/// The journals' (and engine version file's) part of [`check_files`]:
/// what must hold before fjall may open the directory at all.
pub(crate) fn check_journals(dir: &Path) -> Result<(), Damage> {
    if dir.join("keyspaces").is_dir() && !dir.join("version").exists() {
        return Err(Damage::EngineVersionMissing);
    }
    let files = journal::files(dir).map_err(|e| Damage::Journal {
        file: dir.to_path_buf(),
        offset: 0,
        detail: JournalProblem::Unlistable {
            kind: e.kind(),
            message: e.to_string(),
        },
    })?;
    for file in files {
        let scan = journal::scan(&file, false).map_err(|e| Damage::Journal {
            file: file.clone(),
            offset: 0,
            detail: JournalProblem::Unreadable {
                kind: e.kind(),
                message: e.to_string(),
            },
        })?;
        if let journal::JournalEnd::Damaged { offset, detail } = scan.end {
            return Err(Damage::Journal {
                file,
                offset,
                detail,
            });
        }
    }
    Ok(())
}
