//! Parquet import: loads a full export ([`crate::export`]) into an empty
//! data directory. Each row's `envelope` column holds the record's exact
//! log bytes; rows of every file are put back in log order (by `seq`) and
//! appended through the store's checks, so the directory ends with the
//! same records, ids and sequence numbers — hence the same view digests —
//! as the one exported.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, BinaryArray, UInt64Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use strataflow_log::envelope::{Encoded, decode};
use strataflow_log::{Durability, Store, StoreError};

/// Records per append.
const IMPORT_BATCH: usize = 4096;

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
        detail: String,
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
}

fn bad(path: &Path, detail: impl Into<String>) -> ImportError {
    ImportError::Bad {
        path: path.to_path_buf(),
        detail: detail.into(),
    }
}

/// Reads the (seq, envelope) rows of one export file.
fn rows(path: &Path, out: &mut Vec<(u64, Vec<u8>)>) -> Result<(), ImportError> {
    let file = File::open(path).map_err(|e| bad(path, e.to_string()))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(ParquetRecordBatchReaderBuilder::build)
        .map_err(|e| bad(path, e.to_string()))?;
    for batch in reader {
        let batch = batch.map_err(|e| bad(path, e.to_string()))?;
        let seqs = batch
            .column_by_name("seq")
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .ok_or_else(|| bad(path, "no u64 column `seq`"))?;
        let envelopes = batch
            .column_by_name("envelope")
            .and_then(|c| c.as_any().downcast_ref::<BinaryArray>())
            .ok_or_else(|| bad(path, "no binary column `envelope`"))?;
        for i in 0..batch.num_rows() {
            if seqs.is_null(i) || envelopes.is_null(i) {
                return Err(bad(path, format!("row {i}: null seq or envelope")));
            }
            out.push((seqs.value(i), envelopes.value(i).to_vec()));
        }
    }
    Ok(())
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
        std::fs::read_to_string(&manifest_path).map_err(|e| bad(&manifest_path, e.to_string()))?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(&manifest_path, e.to_string()))?;
    let field = |name: &str| manifest.get(name);
    if field("schema_version").and_then(serde_json::Value::as_u64)
        != Some(u64::from(crate::export::EXPORT_SCHEMA_VERSION))
    {
        return Err(bad(&manifest_path, "unknown schema_version"));
    }
    let since = field("since_seq")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if since != 0 {
        return Err(ImportError::Partial { since });
    }
    let files = field("files")
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| bad(&manifest_path, "no `files`"))?;
    let mut all = Vec::new();
    for name in files.keys() {
        rows(&from.join(name), &mut all)?;
    }
    all.sort_unstable_by_key(|(seq, _)| *seq);
    for (i, (seq, _)) in all.iter().enumerate() {
        if *seq != i as u64 + 1 {
            return Err(bad(
                from,
                format!("sequence {} is missing from the export", i as u64 + 1),
            ));
        }
    }
    let total = all.len() as u64;
    for chunk in all.chunks(IMPORT_BATCH) {
        let mut batch = Vec::with_capacity(chunk.len());
        for (seq, bytes) in chunk {
            let record =
                decode(bytes).map_err(|source| StoreError::Decode { seq: *seq, source })?;
            batch.push(Encoded::new(record).map_err(StoreError::from)?);
        }
        store.append_encoded(&batch, Durability::Sync)?;
    }
    Ok(ImportReport {
        records: total,
        last_seq: store.last_seq()?.unwrap_or(0),
    })
}
