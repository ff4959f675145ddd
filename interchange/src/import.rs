//! Parquet import: loads a full export ([`crate::export`]) into an empty
//! data directory. Each row's `envelope` column holds the record's exact
//! log bytes; rows of every file are put back in log order (by `seq`) and
//! appended through the store's checks, so the directory ends with the
//! same records, ids and sequence numbers — hence the same view digests —
//! as the one exported.
//!
//! An import is all or nothing. [`import_parquet`] marks the store
//! ([`IMPORT_INCOMPLETE_CONFIG`], which `audit` reports) before its first
//! record and clears the mark only after checking the counts against the
//! manifest. [`StagedImport`] loads a data directory `D` in a sibling
//! staging directory `D.importing` and renames it to `D` only when
//! everything is done, so a killed import leaves `D` as it was; a rerun
//! removes the stale staging directory and starts over. `D` must not exist,
//! be an empty directory, or be a data directory with no records (one made
//! by `init`): its configuration (block size, profiles) is carried into the
//! import, which then replaces it.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, BinaryArray, UInt64Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use strataflow_log::audit::IMPORT_INCOMPLETE_CONFIG;
use strataflow_log::envelope::{Encoded, decode};
use strataflow_log::pause;
use strataflow_log::{Durability, RecordKind, Store, StoreError};

/// Records per append.
const IMPORT_BATCH: usize = 4096;

/// What an import found different from its export.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportMismatch {
    /// The store's record counts differ from the manifest's.
    #[error(
        "the manifest lists {listed} records; the store holds {counted} ending at sequence {last_seq}"
    )]
    Counts {
        /// Records the export's manifest lists.
        listed: u64,
        /// Records the kind counters of the loaded store add up to.
        counted: u64,
        /// The loaded store's last sequence.
        last_seq: u64,
    },
    /// The staging directory was not finished loading.
    #[error("the staging directory is still marked incomplete")]
    StagingIncomplete,
}

/// What is wrong with a file of an export ([`ImportError::Bad`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportProblem {
    /// A reader refused the file. The text is the foreign reader's (I/O,
    /// arrow, parquet, serde_json) message.
    #[error("{0}")]
    Unreadable(String),
    /// The manifest's `schema_version` is not this build's.
    #[error("unknown schema_version")]
    UnknownSchema,
    /// The manifest lists no files.
    #[error("no `files`")]
    NoFiles,
    /// A column is absent or of another type.
    #[error("no {ty} column `{column}`")]
    NoColumn {
        /// The column.
        column: &'static str,
        /// Its expected type (`u64`, `binary`).
        ty: &'static str,
    },
    /// A row has a null seq or envelope.
    #[error("row {row}: null seq or envelope")]
    NullRow {
        /// The row in its batch.
        row: usize,
    },
    /// A file holds another number of rows than the manifest lists.
    #[error("holds {read} rows; the manifest lists {listed}")]
    RowCount {
        /// Rows read.
        read: u64,
        /// What the manifest lists (as written there).
        listed: serde_json::Value,
    },
    /// A sequence number is absent from every file.
    #[error("sequence {seq} is missing from the export")]
    MissingSeq {
        /// The absent sequence.
        seq: u64,
    },
}

/// Why a directory cannot be imported into ([`ImportError::Target`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetProblem {
    /// The target is not a directory.
    #[error("is not a directory")]
    NotADirectory,
    /// The target holds files and is not a data directory.
    #[error(
        "is not empty and not a data directory: import parquet loads into a new or empty directory"
    )]
    NotEmpty,
    /// The target path has no last component to name a staging directory.
    #[error("has no directory name to stage an import beside")]
    NoName,
    /// The staging path holds something that is not a staging directory.
    #[error("exists and is not an import staging directory: remove it")]
    StagingInTheWay,
}

/// Error of an import.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The directory already holds records.
    #[error(
        "{} already holds {records} records: import parquet loads into an empty data directory",
        dir.display()
    )]
    NotEmpty {
        /// The data directory.
        dir: PathBuf,
        /// Records it holds.
        records: u64,
    },
    /// The export is partial (`--since`).
    #[error("the export covers only records after sequence {since}; import needs a full export")]
    Partial {
        /// Its `since_seq`.
        since: u64,
    },
    /// A file is missing, unreadable or not an export.
    #[error("{}: {detail}", path.display())]
    Bad {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: ImportProblem,
    },
    /// The target directory cannot be imported into (not empty and not an
    /// empty data directory, or not a directory).
    #[error("{}: {detail}", dir.display())]
    Target {
        /// The directory.
        dir: PathBuf,
        /// What is wrong.
        detail: TargetProblem,
    },
    /// After loading, the store's counts differ from the export's manifest.
    #[error(
        "the import of {} is inconsistent: {mismatch}; the target was left untouched",
        from.display()
    )]
    Inconsistent {
        /// The export.
        from: PathBuf,
        /// What differs.
        mismatch: ImportMismatch,
    },
    /// Preparing, cleaning or renaming the staging directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The log refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an import loaded.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ImportReport {
    /// Records appended.
    pub records: u64,
    /// Last sequence number.
    pub last_seq: u64,
    /// The exported directory's embedder setting (the manifest's
    /// `embedder`), for the caller to set again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
}

fn bad(path: &Path, detail: ImportProblem) -> ImportError {
    ImportError::Bad {
        path: path.to_path_buf(),
        detail,
    }
}

fn unreadable(path: &Path, e: impl std::fmt::Display) -> ImportError {
    bad(path, ImportProblem::Unreadable(e.to_string()))
}

/// Reads the (seq, envelope) rows of one export file; returns how many.
fn rows(path: &Path, out: &mut Vec<(u64, Vec<u8>)>) -> Result<u64, ImportError> {
    let before = out.len();
    let file = File::open(path).map_err(|e| unreadable(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(ParquetRecordBatchReaderBuilder::build)
        .map_err(|e| unreadable(path, e))?;
    for batch in reader {
        let batch = batch.map_err(|e| unreadable(path, e))?;
        let seqs = batch
            .column_by_name("seq")
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .ok_or_else(|| {
                bad(
                    path,
                    ImportProblem::NoColumn {
                        column: "seq",
                        ty: "u64",
                    },
                )
            })?;
        let envelopes = batch
            .column_by_name("envelope")
            .and_then(|c| c.as_any().downcast_ref::<BinaryArray>())
            .ok_or_else(|| {
                bad(
                    path,
                    ImportProblem::NoColumn {
                        column: "envelope",
                        ty: "binary",
                    },
                )
            })?;
        for i in 0..batch.num_rows() {
            if seqs.is_null(i) || envelopes.is_null(i) {
                return Err(bad(path, ImportProblem::NullRow { row: i }));
            }
            out.push((seqs.value(i), envelopes.value(i).to_vec()));
        }
    }
    Ok((out.len() - before) as u64)
}

/// Loads the export in `from` into `store`, which must be empty.
pub fn import_parquet(store: &Store, from: &Path) -> Result<ImportReport, ImportError> {
    if let Some(last) = store.last_seq()? {
        return Err(ImportError::NotEmpty {
            dir: store.path().to_path_buf(),
            records: last,
        });
    }
    let manifest_path = from.join("manifest.json");
    let text =
        std::fs::read_to_string(&manifest_path).map_err(|e| unreadable(&manifest_path, e))?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| unreadable(&manifest_path, e))?;
    let field = |name: &str| manifest.get(name);
    if field("schema_version").and_then(serde_json::Value::as_u64)
        != Some(u64::from(crate::export::EXPORT_SCHEMA_VERSION))
    {
        return Err(bad(&manifest_path, ImportProblem::UnknownSchema));
    }
    let since = field("since_seq")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if since != 0 {
        return Err(ImportError::Partial { since });
    }
    let files = field("files")
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| bad(&manifest_path, ImportProblem::NoFiles))?;
    let mut all = Vec::new();
    for (name, listed) in files {
        let path = from.join(name);
        let read = rows(&path, &mut all)?;
        if listed.as_u64() != Some(read) {
            return Err(bad(
                &path,
                ImportProblem::RowCount {
                    read,
                    listed: listed.clone(),
                },
            ));
        }
    }
    all.sort_unstable_by_key(|(seq, _)| *seq);
    for (i, (seq, _)) in all.iter().enumerate() {
        if *seq != i as u64 + 1 {
            return Err(bad(from, ImportProblem::MissingSeq { seq: i as u64 + 1 }));
        }
    }
    let total = all.len() as u64;
    // From here on the store holds part of the export until the mark is
    // cleared: `audit` reports it.
    store.set_config(IMPORT_INCOMPLETE_CONFIG, &from.display().to_string())?;
    for chunk in all.chunks(IMPORT_BATCH) {
        pause::point("import");
        let mut batch = Vec::with_capacity(chunk.len());
        for (seq, bytes) in chunk {
            let record =
                decode(bytes).map_err(|source| StoreError::Decode { seq: *seq, source })?;
            batch.push(Encoded::new(record).map_err(StoreError::from)?);
        }
        store.append_encoded(&batch, Durability::Sync)?;
    }
    let last_seq = store.last_seq()?.unwrap_or(0);
    let mut counted = 0u64;
    for kind in RecordKind::ALL {
        counted += store.count(kind)?;
    }
    if last_seq != total || counted != total {
        return Err(ImportError::Inconsistent {
            from: from.to_path_buf(),
            mismatch: ImportMismatch::Counts {
                listed: total,
                counted,
                last_seq,
            },
        });
    }
    pause::point("import-done");
    store.remove_config(IMPORT_INCOMPLETE_CONFIG)?;
    Ok(ImportReport {
        records: total,
        last_seq,
        embedder: field("embedder")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
    })
}

/// What the target of a [`StagedImport`] was when it began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TargetState {
    /// Nothing there.
    Absent,
    /// An empty directory.
    EmptyDir,
    /// A data directory without records (e.g. made by `init`).
    EmptyStore,
}

/// An import into a data directory through a staging directory beside it
/// (see the module documentation): [`StagedImport::begin`], then load
/// [`StagedImport::staging`] (e.g. with [`import_parquet`]) and close it,
/// then [`StagedImport::finish`] renames it into place.
#[derive(Debug)]
pub struct StagedImport {
    target: PathBuf,
    staging: PathBuf,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ImportError + '_ {
    move |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether `dir` looks like a data directory (fjall's `version` file and
/// `keyspaces` folder), so that opening it will not write into a foreign
/// directory.
fn is_store_dir(dir: &Path) -> bool {
    dir.join("version").is_file() && dir.join("keyspaces").is_dir()
}

fn target_state(target: &Path) -> Result<(TargetState, Vec<(String, String)>), ImportError> {
    let refuse = |detail: TargetProblem| ImportError::Target {
        dir: target.to_path_buf(),
        detail,
    };
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((TargetState::Absent, Vec::new()));
        }
        Err(e) => return Err(io_error(target)(e)),
        Ok(meta) if !meta.is_dir() => {
            return Err(refuse(TargetProblem::NotADirectory));
        }
        Ok(_) => {}
    }
    let mut entries = std::fs::read_dir(target).map_err(io_error(target))?;
    if entries.next().is_none() {
        return Ok((TargetState::EmptyDir, Vec::new()));
    }
    if !is_store_dir(target) {
        return Err(refuse(TargetProblem::NotEmpty));
    }
    let store = Store::open(target)?;
    if let Some(records) = store.last_seq()? {
        return Err(ImportError::NotEmpty {
            dir: target.to_path_buf(),
            records,
        });
    }
    let configs = store
        .configs_with_prefix("")?
        .into_iter()
        .filter(|(name, _)| name != IMPORT_INCOMPLETE_CONFIG)
        .collect();
    Ok((TargetState::EmptyStore, configs))
}

impl StagedImport {
    /// Checks the target, removes a stale staging directory (refusing one
    /// that another process has open, or that is not a data directory) and
    /// creates a fresh one holding the target's configuration and the
    /// incomplete-import mark.
    pub fn begin(target: &Path) -> Result<Self, ImportError> {
        let name = target.file_name().ok_or_else(|| ImportError::Target {
            dir: target.to_path_buf(),
            detail: TargetProblem::NoName,
        })?;
        let mut staging_name = name.to_os_string();
        staging_name.push(".importing");
        let staging = target.with_file_name(staging_name);
        let (_, configs) = target_state(target)?;
        if std::fs::symlink_metadata(&staging).is_ok() {
            let empty = std::fs::read_dir(&staging)
                .map(|mut e| e.next().is_none())
                .unwrap_or(false);
            if !empty {
                if !is_store_dir(&staging) {
                    return Err(ImportError::Target {
                        dir: staging,
                        detail: TargetProblem::StagingInTheWay,
                    });
                }
                // A process importing there now holds its lock.
                drop(Store::open(&staging)?);
            }
            std::fs::remove_dir_all(&staging).map_err(io_error(&staging))?;
        }
        let store = Store::open(&staging)?;
        store.set_config(IMPORT_INCOMPLETE_CONFIG, "(staging)")?;
        for (name, value) in &configs {
            store.set_config(name, value)?;
        }
        drop(store);
        Ok(Self {
            target: target.to_path_buf(),
            staging,
        })
    }

    /// The staging directory to load (then close before [`Self::finish`]).
    pub fn staging(&self) -> &Path {
        &self.staging
    }

    /// Renames the loaded staging directory into place, after checking the
    /// import is complete and the target is still new, empty or a data
    /// directory without records (which it replaces).
    pub fn finish(self) -> Result<(), ImportError> {
        {
            let store = Store::open(&self.staging)?;
            if let Some(source) = store.config(IMPORT_INCOMPLETE_CONFIG)? {
                return Err(ImportError::Inconsistent {
                    from: PathBuf::from(source),
                    mismatch: ImportMismatch::StagingIncomplete,
                });
            }
        }
        pause::point("import-rename");
        match target_state(&self.target)?.0 {
            TargetState::Absent => {}
            TargetState::EmptyDir => {
                std::fs::remove_dir(&self.target).map_err(io_error(&self.target))?;
            }
            TargetState::EmptyStore => {
                std::fs::remove_dir_all(&self.target).map_err(io_error(&self.target))?;
            }
        }
        std::fs::rename(&self.staging, &self.target).map_err(io_error(&self.target))?;
        // The rename is durable once the parent directory is synced.
        let parent = match self.target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if let Ok(dir) = File::open(&parent) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}
