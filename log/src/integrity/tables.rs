//! Checks of fjall's table files against the checksums fjall recorded.
//!
//! Each keyspace folder (`keyspaces/<id>/`) holds `current` (the id of the
//! live version, u64 LE, then the xxh3-128 of that version file, u128 LE,
//! then the checksum type, u8) and the version file `v<id>`, an `sfa`
//! archive whose `tables` section lists every live table with the xxh3-128
//! of its whole file (lsm-tree 3.1, `src/version/mod.rs`). A table whose
//! bytes no longer hash to its recorded checksum is damaged.
//!
//! Hashing every table on every open would make an open cost the size of
//! the store, so a verified table's length and modification time are kept
//! in `strataflow.tables` beside the journal: an open re-hashes only tables
//! that are new or whose length or modification time changed. Damage that
//! keeps both (bit rot under an unchanged file) is found by `audit --deep`,
//! which hashes every table.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::TableProblem;
use xxhash_rust::xxh3::Xxh3;

/// The file of verified tables, in the data directory.
pub(crate) const VERIFIED_FILE: &str = "strataflow.tables";

/// One live table of a keyspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LiveTable {
    /// Path relative to the data directory (`keyspaces/<ks>/tables/<id>`).
    pub relative: String,
    /// Recorded xxh3-128 of the whole file.
    pub checksum: u128,
}

/// A problem with fjall's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableDamage {
    /// The file, relative to the data directory.
    pub file: String,
    /// What is wrong.
    pub detail: TableProblem,
}

fn xxh3_128_of(path: &Path) -> std::io::Result<u128> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        #[expect(clippy::expect_used, reason = "read returns at most buf.len() bytes")]
        let read = buf.get(..n).expect("n <= buf.len()");
        hasher.update(read);
    }
    Ok(hasher.digest128())
}

/// The live tables of one keyspace folder, from its version file, after
/// checking the version file against `current`.
fn live_tables(dir: &Path, keyspace: &str) -> Result<Vec<LiveTable>, TableDamage> {
    let folder = dir.join("keyspaces").join(keyspace);
    let rel = |name: &str| format!("keyspaces/{keyspace}/{name}");
    let damage = |file: String, detail: TableProblem| TableDamage { file, detail };
    let current = match std::fs::read(folder.join("current")) {
        Ok(bytes) => bytes,
        // A keyspace created but never flushed has no version yet.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(damage(rel("current"), TableProblem::unreadable(&e))),
    };
    let (Some(id), Some(sum)) = (
        current.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok()),
        current
            .get(8..24)
            .and_then(|b| <[u8; 16]>::try_from(b).ok()),
    ) else {
        return Err(damage(
            rel("current"),
            TableProblem::CurrentLength { len: current.len() },
        ));
    };
    let version = format!("v{}", u64::from_le_bytes(id));
    let version_path = folder.join(&version);
    let got = xxh3_128_of(&version_path)
        .map_err(|e| damage(rel(&version), TableProblem::unreadable(&e)))?;
    if got != u128::from_le_bytes(sum) {
        return Err(damage(rel(&version), TableProblem::VersionChecksum));
    }
    let bad = |detail: TableProblem| damage(rel(&version), detail);
    let reader = sfa::Reader::new(&version_path)
        .map_err(|e| bad(TableProblem::VersionFormat(format!("{e:?}"))))?;
    let section = reader
        .toc()
        .section(b"tables")
        .ok_or_else(|| bad(TableProblem::NoTablesSection))?;
    let mut r = section
        .buf_reader(&version_path)
        .map_err(|e| bad(TableProblem::unreadable(&e)))?;
    let mut read = |n: usize| -> Result<Vec<u8>, TableDamage> {
        let mut b = vec![0u8; n];
        r.read_exact(&mut b).map_err(|e| {
            bad(TableProblem::TablesSection {
                kind: e.kind(),
                message: e.to_string(),
            })
        })?;
        Ok(b)
    };
    let le64 = |b: &[u8]| b.try_into().map(u64::from_le_bytes).unwrap_or(0);
    let mut out = Vec::new();
    let levels = read(1)?.first().copied().unwrap_or(0);
    for _ in 0..levels {
        let runs = read(1)?.first().copied().unwrap_or(0);
        for _ in 0..runs {
            let count = read(4)?
                .as_slice()
                .try_into()
                .map(u32::from_le_bytes)
                .unwrap_or(0);
            for _ in 0..count {
                let entry = read(8 + 1 + 16 + 8)?;
                let table = le64(entry.get(..8).unwrap_or_default());
                if entry.get(8) != Some(&0) {
                    return Err(bad(TableProblem::ChecksumType));
                }
                let checksum = entry
                    .get(9..25)
                    .and_then(|b| <[u8; 16]>::try_from(b).ok())
                    .map(u128::from_le_bytes)
                    .unwrap_or(0);
                out.push(LiveTable {
                    relative: format!("keyspaces/{keyspace}/tables/{table}"),
                    checksum,
                });
            }
        }
    }
    Ok(out)
}

/// Every live table of the data directory.
pub(crate) fn all_live_tables(dir: &Path) -> Result<Vec<LiveTable>, TableDamage> {
    let root = dir.join("keyspaces");
    let mut names = Vec::new();
    match std::fs::read_dir(&root) {
        Ok(entries) => {
            for entry in entries.flatten() {
                if entry.path().is_dir() {
                    names.push(entry.file_name().to_string_lossy().into_owned());
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(TableDamage {
                file: "keyspaces".into(),
                detail: TableProblem::Unlistable {
                    kind: e.kind(),
                    message: e.to_string(),
                },
            });
        }
    }
    names.sort();
    let mut out = Vec::new();
    for name in names {
        out.extend(live_tables(dir, &name)?);
    }
    Ok(out)
}

/// Length and modification time (ns since the epoch) of a file.
fn stamp(path: &Path) -> std::io::Result<(u64, u128)> {
    let meta = std::fs::metadata(path)?;
    let mtime = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    Ok((meta.len(), mtime))
}

type Verified = BTreeMap<String, (u64, u128)>;

/// The stamps of the tables verified before. A missing or unreadable file is
/// an empty cache: every table is hashed again, so nothing is trusted
/// unverified.
fn load_verified(dir: &Path) -> Verified {
    std::fs::read(dir.join(VERIFIED_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<(String, u64, String)>>(&b).ok())
        .map(|rows| {
            rows.into_iter()
                .filter_map(|(f, len, mtime)| Some((f, (len, mtime.parse().ok()?))))
                .collect()
        })
        .unwrap_or_default()
}

fn save_verified(dir: &Path, verified: &Verified) -> std::io::Result<()> {
    let rows: Vec<(&String, u64, String)> = verified
        .iter()
        .map(|(f, (len, mtime))| (f, *len, mtime.to_string()))
        .collect();
    let bytes = serde_json::to_vec(&rows).map_err(std::io::Error::other)?;
    super::write_atomically(&dir.join(VERIFIED_FILE), &bytes)
}

/// Checks every live table: `deep` hashes all of them; otherwise only those
/// new or changed since they were last verified. Returns how many were
/// hashed.
pub(crate) fn check(dir: &Path, deep: bool) -> Result<usize, TableDamage> {
    let tables = all_live_tables(dir)?;
    let old = load_verified(dir);
    let mut verified = Verified::new();
    let mut hashed = 0;
    for table in &tables {
        let path: PathBuf = dir.join(&table.relative);
        let now = stamp(&path).map_err(|e| TableDamage {
            file: table.relative.clone(),
            detail: if e.kind() == std::io::ErrorKind::NotFound {
                TableProblem::Missing
            } else {
                TableProblem::unreadable(&e)
            },
        })?;
        if deep || old.get(&table.relative) != Some(&now) {
            hashed += 1;
            let got = xxh3_128_of(&path).map_err(|e| TableDamage {
                file: table.relative.clone(),
                detail: TableProblem::unreadable(&e),
            })?;
            if got != table.checksum {
                return Err(TableDamage {
                    file: table.relative.clone(),
                    detail: TableProblem::Checksum,
                });
            }
        }
        verified.insert(table.relative.clone(), now);
    }
    if verified != old {
        // Only a cache: failing to save it costs a re-hash next time.
        let _ = save_verified(dir, &verified);
    }
    Ok(hashed)
}
