//! API keys: a key file maps each key to exactly one tenant, or to admin.
//!
//! A key is shown once, when it is made (`strataflow keys add`); the file
//! keeps only its blake3 hash, so a leaked key file grants nothing. Each
//! entry has a short id (the first 12 hex digits of the hash) by which it is
//! listed and revoked.
//!
//! The file is JSON (`docs/format.md` §7):
//!
//! ```json
//! {"format": 1, "keys": [
//!   {"id": "3f1c…", "hash": "<64 hex>", "tenant": "acme", "label": "agent-1"},
//!   {"id": "9a02…", "hash": "<64 hex>", "admin": true}
//! ]}
//! ```
//!
//! It is rewritten whole through a temporary file and a rename, with mode
//! 0600 on Unix.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Version of the key file layout this build reads and writes.
pub const KEY_FILE_FORMAT: u32 = 1;

/// Prefix of every key, so a key is recognisable in a config or a log.
pub const KEY_PREFIX: &str = "sfk_";

/// Longest tenant name a key may be bound to, in bytes (as for records).
pub const MAX_TENANT_BYTES: usize = 256;

/// Random bytes in a key (shown as hex after [`KEY_PREFIX`]).
const KEY_BYTES: usize = 32;

/// Hex digits of the hash that name an entry.
const ID_DIGITS: usize = 12;

/// What a key may do.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scope {
    /// Every route, for exactly this tenant.
    Tenant(String),
    /// Every route, for every tenant.
    Admin,
}

impl Scope {
    /// The tenant a request with this key acts on when it names none; for
    /// admin, the empty (default) tenant.
    pub fn default_tenant(&self) -> &str {
        match self {
            Self::Tenant(t) => t,
            Self::Admin => "",
        }
    }

    /// Whether this key may act on `tenant`.
    pub fn allows(&self, tenant: &str) -> bool {
        match self {
            Self::Tenant(t) => t == tenant,
            Self::Admin => true,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tenant(t) => write!(f, "tenant `{t}`"),
            Self::Admin => f.write_str("admin"),
        }
    }
}

/// One key of the file (never the key itself: its hash).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEntry {
    /// Short id: the first 12 hex digits of the hash.
    pub id: String,
    /// blake3 of the key's bytes.
    pub hash: blake3::Hash,
    /// What the key may do.
    pub scope: Scope,
    /// A free-form label given when the key was made.
    pub label: Option<String>,
}

/// A key just made: the only time its clear text exists.
#[derive(Debug)]
pub struct NewKey {
    /// The entry stored in the file.
    pub entry: KeyEntry,
    /// The key to hand to the client (`sfk_` and 64 hex digits).
    pub key: String,
}

/// Error of reading, changing or writing a key file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key file cannot be read or written.
    #[error("key file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The key file is not valid JSON of the expected shape.
    #[error("key file {}: line {line}, column {column}: {problem}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        problem: String,
    },
    /// An entry of the key file is wrong.
    #[error("key file {}: key {index}: {problem}", path.display())]
    BadEntry {
        /// The file.
        path: PathBuf,
        /// 0-based index in `keys`.
        index: usize,
        /// What is wrong.
        problem: &'static str,
    },
    /// The key file was written by another layout version.
    #[error("key file {}: format {found}; this build reads format {KEY_FILE_FORMAT}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// The version it declares.
        found: u32,
    },
    /// No key has this id.
    #[error("no key with id `{id}` in {}", path.display())]
    UnknownKey {
        /// The id asked for.
        id: String,
        /// The file.
        path: PathBuf,
    },
    /// A tenant name that no key can be bound to.
    #[error("tenant `{shown}`: {problem}")]
    BadTenant {
        /// The name as given, cut to 72 characters.
        shown: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// The system has no randomness to make a key with.
    #[error("no random bytes for a new key: {0}")]
    Random(getrandom::Error),
}

/// On-disk shape of the file.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShape {
    format: u32,
    keys: Vec<EntryShape>,
}

/// On-disk shape of an entry.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryShape {
    id: String,
    hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tenant: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    admin: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
}

/// The keys of one key file, in the order they were added.
#[derive(Clone, Debug)]
pub struct KeyFile {
    path: PathBuf,
    entries: Vec<KeyEntry>,
}

impl KeyFile {
    /// Reads `path`; a missing file is an [`KeyError::Io`] of kind `NotFound`.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Reads `path`, or starts an empty key file there if it does not exist.
    pub fn load_or_new(path: &Path) -> Result<Self, KeyError> {
        match Self::load(path) {
            Err(KeyError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(Self {
                    path: path.to_path_buf(),
                    entries: Vec::new(),
                })
            }
            other => other,
        }
    }

    fn parse(path: &Path, text: &str) -> Result<Self, KeyError> {
        let shape: FileShape = serde_json::from_str(text).map_err(|e| KeyError::Malformed {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            problem: e.to_string(),
        })?;
        if shape.format != KEY_FILE_FORMAT {
            return Err(KeyError::Format {
                path: path.to_path_buf(),
                found: shape.format,
            });
        }
        let bad = |index, problem| KeyError::BadEntry {
            path: path.to_path_buf(),
            index,
            problem,
        };
        let mut entries = Vec::with_capacity(shape.keys.len());
        for (index, e) in shape.keys.into_iter().enumerate() {
            let hash = blake3::Hash::from_hex(&e.hash)
                .map_err(|_| bad(index, "`hash` is not 64 hex digits"))?;
            if e.id != short_id(&hash) {
                return Err(bad(index, "`id` is not the start of `hash`"));
            }
            let scope = match (e.tenant, e.admin) {
                (Some(t), false) => Scope::Tenant(t),
                (None, true) => Scope::Admin,
                (Some(_), true) => return Err(bad(index, "both `tenant` and `admin`")),
                (None, false) => return Err(bad(index, "neither `tenant` nor `admin`")),
            };
            if entries.iter().any(|k: &KeyEntry| k.hash == hash) {
                return Err(bad(index, "the same key twice"));
            }
            entries.push(KeyEntry {
                id: e.id,
                hash,
                scope,
                label: e.label,
            });
        }
        Ok(Self {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every key, in the order they were added.
    pub fn entries(&self) -> &[KeyEntry] {
        &self.entries
    }

    /// Whether the file holds no key.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Makes a key for `scope` and adds its hash (call [`KeyFile::save`]).
    pub fn add(&mut self, scope: Scope, label: Option<String>) -> Result<NewKey, KeyError> {
        if let Scope::Tenant(t) = &scope {
            check_tenant(t)?;
        }
        let mut bytes = [0u8; KEY_BYTES];
        getrandom::fill(&mut bytes).map_err(KeyError::Random)?;
        let key = format!("{KEY_PREFIX}{}", hex::encode(bytes));
        let hash = blake3::hash(key.as_bytes());
        let entry = KeyEntry {
            id: short_id(&hash),
            hash,
            scope,
            label,
        };
        self.entries.push(entry.clone());
        Ok(NewKey { entry, key })
    }

    /// Removes the key with id `id` (call [`KeyFile::save`]).
    pub fn revoke(&mut self, id: &str) -> Result<KeyEntry, KeyError> {
        let Some(at) = self.entries.iter().position(|e| e.id == id) else {
            return Err(KeyError::UnknownKey {
                id: id.to_owned(),
                path: self.path.clone(),
            });
        };
        Ok(self.entries.remove(at))
    }

    /// The entry of a presented key, if any. Every entry is compared (in
    /// constant time per entry), so the time taken does not tell which
    /// prefix matched.
    pub fn authenticate(&self, presented: &str) -> Option<&KeyEntry> {
        let hash = blake3::hash(presented.as_bytes());
        let mut found = None;
        for e in &self.entries {
            // `blake3::Hash`'s equality is constant-time.
            if e.hash == hash && found.is_none() {
                found = Some(e);
            }
        }
        found
    }

    /// Writes the file through a temporary file and a rename (mode 0600).
    pub fn save(&self) -> Result<(), KeyError> {
        let shape = FileShape {
            format: KEY_FILE_FORMAT,
            keys: self
                .entries
                .iter()
                .map(|e| EntryShape {
                    id: e.id.clone(),
                    hash: e.hash.to_hex().to_string(),
                    tenant: match &e.scope {
                        Scope::Tenant(t) => Some(t.clone()),
                        Scope::Admin => None,
                    },
                    admin: e.scope == Scope::Admin,
                    label: e.label.clone(),
                })
                .collect(),
        };
        let io = |source| KeyError::Io {
            path: self.path.clone(),
            source,
        };
        let mut text = serde_json::to_string_pretty(&shape).map_err(|e| io(e.into()))?;
        text.push('\n');
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let tmp = dir.join(format!(
            ".{}.tmp",
            self.path
                .file_name()
                .map_or_else(|| "keys".into(), |n| n.to_string_lossy())
        ));
        write_private(&tmp, text.as_bytes()).map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(io)
    }
}

/// The id of a key's hash.
fn short_id(hash: &blake3::Hash) -> String {
    let hex = hash.to_hex();
    hex.as_str().chars().take(ID_DIGITS).collect()
}

/// Checks a tenant name a key is bound to.
pub fn check_tenant(tenant: &str) -> Result<(), KeyError> {
    let problem = if tenant.len() > MAX_TENANT_BYTES {
        Some("is longer than 256 bytes")
    } else if tenant.chars().any(char::is_control) {
        Some("holds a control character")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(KeyError::BadTenant {
            shown: tenant.chars().take(72).collect(),
            problem,
        }),
        None => Ok(()),
    }
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_stored_hashed_and_found_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let mut file = KeyFile::load_or_new(&path).unwrap();
        let acme = file
            .add(Scope::Tenant("acme".into()), Some("agent".into()))
            .unwrap();
        let admin = file.add(Scope::Admin, None).unwrap();
        file.save().unwrap();

        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&acme.key), "the clear key is never stored");
        assert!(!text.contains(&admin.key[KEY_PREFIX.len()..]));
        assert!(acme.key.starts_with(KEY_PREFIX) && acme.key.len() == 4 + 64);

        let again = KeyFile::load(&path).unwrap();
        let found = again.authenticate(&acme.key).unwrap();
        assert_eq!(found.scope, Scope::Tenant("acme".into()));
        assert_eq!(found.label.as_deref(), Some("agent"));
        assert_eq!(again.authenticate(&admin.key).unwrap().scope, Scope::Admin);
        assert!(again.authenticate("sfk_0000").is_none());
        assert!(again.authenticate("").is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn revoke_removes_exactly_that_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let mut file = KeyFile::load_or_new(&path).unwrap();
        let a = file.add(Scope::Tenant("a".into()), None).unwrap();
        let b = file.add(Scope::Tenant("b".into()), None).unwrap();
        file.revoke(&a.entry.id).unwrap();
        file.save().unwrap();
        let again = KeyFile::load(&path).unwrap();
        assert!(again.authenticate(&a.key).is_none());
        assert!(again.authenticate(&b.key).is_some());
        let err = file.revoke("nope").unwrap_err();
        assert!(matches!(err, KeyError::UnknownKey { ref id, .. } if id == "nope"));
    }

    #[test]
    fn scopes_allow_only_their_tenant() {
        let acme = Scope::Tenant("acme".into());
        assert!(acme.allows("acme"));
        assert!(!acme.allows("other"));
        assert!(!acme.allows(""));
        assert_eq!(acme.default_tenant(), "acme");
        assert!(Scope::Admin.allows("anything"));
        assert_eq!(Scope::Admin.default_tenant(), "");
    }

    #[test]
    fn bad_files_name_where_they_are_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let cases: &[(&str, &str)] = &[
            ("{\"format\": 1,\n \"keys\": [}", "line 2"),
            ("{\"format\": 2, \"keys\": []}", "format 2"),
            (
                "{\"format\": 1, \"keys\": [{\"id\": \"x\", \"hash\": \"zz\", \"admin\": true}]}",
                "key 0: `hash` is not 64 hex digits",
            ),
            (
                &format!(
                    "{{\"format\": 1, \"keys\": [{{\"id\": \"000000000000\", \"hash\": \"{}\", \"admin\": true}}]}}",
                    blake3::hash(b"k").to_hex()
                ),
                "key 0: `id` is not the start of `hash`",
            ),
        ];
        for (text, expected) in cases {
            std::fs::write(&path, text).unwrap();
            let err = KeyFile::load(&path).unwrap_err().to_string();
            assert!(err.contains(expected), "{err} lacks {expected}");
            assert!(err.contains("keys.json"), "{err} names no file");
        }
        let mut file = KeyFile::load_or_new(&dir.path().join("new.json")).unwrap();
        let err = file.add(Scope::Tenant("a\u{7}b".into()), None).unwrap_err();
        assert!(matches!(err, KeyError::BadTenant { .. }), "{err}");
    }
}
