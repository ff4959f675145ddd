//! The store's manifest, `strataflow.manifest` in the data directory: what
//! the log held after its last durable commit. It is rewritten (a temporary
//! file renamed over it) after every synced commit that adds records, and
//! when a store that made unsynced commits closes (after persisting the
//! journal), so it never runs ahead of the durable data: a crash before it
//! is written leaves it behind the log, which an open accepts and brings up
//! to date; a log shorter than its manifest has lost durable records.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ManifestDamage;

/// File name of the manifest.
pub(crate) const FILE: &str = "strataflow.manifest";
/// Layout version of the manifest.
pub(crate) const FORMAT: u32 = 1;

/// What the log held after a commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// Layout version.
    pub format: u32,
    /// Last sequence number (records are `1..=last_seq`).
    pub last_seq: u64,
    /// Records per kind name.
    pub counts: BTreeMap<String, u64>,
    /// fjall's internal id of each keyspace, by name (to read journals and
    /// name table files without opening the store).
    pub keyspaces: BTreeMap<String, u64>,
}

impl Manifest {
    /// A manifest of these figures.
    pub fn new(
        last_seq: u64,
        counts: BTreeMap<String, u64>,
        keyspaces: BTreeMap<String, u64>,
    ) -> Self {
        Self {
            format: FORMAT,
            last_seq,
            counts,
            keyspaces,
        }
    }

    /// Reads the manifest; `Ok(None)` when there is none (a directory made
    /// before manifests, or a new one).
    pub fn load(dir: &Path) -> Result<Option<Self>, ManifestDamage> {
        let bytes = match std::fs::read(dir.join(FILE)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(ManifestDamage::Unreadable {
                    kind: e.kind(),
                    message: e.to_string(),
                });
            }
        };
        let manifest: Self =
            serde_json::from_slice(&bytes).map_err(|e| ManifestDamage::Invalid {
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            })?;
        if manifest.format != FORMAT {
            return Err(ManifestDamage::Layout {
                found: manifest.format,
                supported: FORMAT,
            });
        }
        Ok(Some(manifest))
    }

    /// The manifest's layout version when it is one this build cannot
    /// read (a directory written by another strataflow version). Checked
    /// before the storage engine opens the directory, so such a directory
    /// is refused unchanged; a missing or unparsable manifest is left to
    /// [`Manifest::load`].
    pub fn unsupported_layout(dir: &Path) -> Option<u32> {
        #[derive(Deserialize)]
        struct Layout {
            format: u32,
        }
        let bytes = std::fs::read(dir.join(FILE)).ok()?;
        let layout: Layout = serde_json::from_slice(&bytes).ok()?;
        (layout.format != FORMAT).then_some(layout.format)
    }

    /// Writes it (atomically: a reader sees the old one or the new one).
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        super::write_atomically(&dir.join(FILE), &bytes)
    }
}
