//! A read-only reader of fjall 3's journal files (`<n>.jnl` in the data
//! directory), so that damage is found *before* fjall opens the directory:
//! fjall's own recovery truncates a journal at its first bad entry, which
//! would destroy every batch written after it.
//!
//! The layout (fjall 3.1, `src/journal/entry.rs`) is a sequence of batches,
//! each `Start`, its items, `End`:
//! - `Start`: tag 1, item count (u32 LE), engine seqno (u64 LE);
//! - `Item`: tag 2, value type (u8), compression (u8: 0 none, 1 lz4),
//!   keyspace id (u64 LE), key length (u16 LE), value length (u32 LE),
//!   stored value length (u32 LE), key, stored value;
//! - `Clear`: tag 4, keyspace id (u64 LE);
//! - `End`: tag 3, xxh3-64 (u64 LE) of the batch's `Item` and `Clear` entries
//!   as stored, then the trailer `FJL\x03`.
//!
//! A journal ends cleanly at its end or where only zero bytes follow (fjall
//! preallocates). A last batch cut short (a crash during its write) was never
//! acknowledged and is tolerated, as fjall tolerates it. Anything else — a
//! batch whose checksum fails, an entry that cannot be read while non-zero
//! bytes follow — is damage.

use std::io::Read;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

const TAG_START: u8 = 1;
const TAG_ITEM: u8 = 2;
const TAG_END: u8 = 3;
const TAG_CLEAR: u8 = 4;
const TRAILER: &[u8; 4] = b"FJL\x03";
/// fjall's value type of a plain insert.
const VALUE_TYPE_VALUE: u8 = 0;

/// One key/value of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JournalItem {
    /// fjall's internal keyspace id.
    pub keyspace: u64,
    /// Key.
    pub key: Vec<u8>,
    /// Value (decompressed).
    pub value: Vec<u8>,
    /// True for an insert, false for a removal.
    pub insert: bool,
}

/// A batch that passed its checksum.
#[derive(Clone, Debug)]
pub(crate) struct JournalBatch {
    /// Its items.
    pub items: Vec<JournalItem>,
}

/// Where reading one journal stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JournalEnd {
    /// At the end of the file or where only zeros follow.
    Clean,
    /// A last batch cut short, followed by nothing but zeros.
    TornTail {
        /// Offset of the incomplete batch.
        offset: u64,
    },
    /// A bad batch or entry with data after it.
    Damaged {
        /// Offset of the first bad byte found.
        offset: u64,
        /// What is wrong there.
        detail: super::JournalProblem,
    },
}

/// What reading a journal found.
#[derive(Clone, Debug)]
pub(crate) struct JournalScan {
    /// The file.
    pub file: PathBuf,
    /// Batches that passed their checksum, in file order (with `keep_items`,
    /// also those found after the first damage by resynchronising).
    pub batches: Vec<JournalBatch>,
    /// Valid batches (counted even when their items are not kept).
    pub valid_batches: u64,
    /// How the journal ends.
    pub end: JournalEnd,
}

/// Why one journal entry could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryError {
    /// The data ends inside it.
    Eof,
    /// An entry tag that has no place here.
    Tag {
        /// The tag read.
        tag: u8,
        /// Where it was read (`where a batch should start`, …).
        place: &'static str,
    },
    /// A compressed value lz4 cannot decompress (lz4's message).
    Lz4(String),
    /// A compression type this reader does not know.
    Compression(u8),
    /// The batch trailer is not `FJL3`.
    Trailer,
    /// The batch's checksum does not match its entries.
    Checksum,
}

impl std::error::Error for EntryError {}

impl std::fmt::Display for EntryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Eof => f.write_str("an entry runs past the end of the file"),
            Self::Tag { tag, place } => write!(f, "entry tag {tag} {place}"),
            Self::Lz4(e) => write!(f, "lz4 value: {e}"),
            Self::Compression(c) => write!(f, "compression type {c}"),
            Self::Trailer => f.write_str("batch trailer is not FJL3"),
            Self::Checksum => f.write_str("batch checksum does not match"),
        }
    }
}

/// A cursor over the journal's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], EntryError> {
        let end = self.pos.checked_add(n).ok_or(EntryError::Eof)?;
        let out = self.bytes.get(self.pos..end).ok_or(EntryError::Eof)?;
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, EntryError> {
        self.take(1)?.first().copied().ok_or(EntryError::Eof)
    }

    fn u16(&mut self) -> Result<u16, EntryError> {
        let b: [u8; 2] = self.take(2)?.try_into().map_err(|_| EntryError::Eof)?;
        Ok(u16::from_le_bytes(b))
    }

    fn u32(&mut self) -> Result<u32, EntryError> {
        let b: [u8; 4] = self.take(4)?.try_into().map_err(|_| EntryError::Eof)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, EntryError> {
        let b: [u8; 8] = self.take(8)?.try_into().map_err(|_| EntryError::Eof)?;
        Ok(u64::from_le_bytes(b))
    }
}

/// Reads one batch starting at `pos`; `Ok((batch, end))` when it is whole
/// and its checksum holds.
fn read_batch(
    bytes: &[u8],
    pos: usize,
    keep_items: bool,
) -> Result<(Vec<JournalItem>, usize), (usize, EntryError)> {
    let mut c = Cursor { bytes, pos };
    let at = |c: &Cursor<'_>, e| (c.pos, e);
    let tag = c.u8().map_err(|e| at(&c, e))?;
    if tag != TAG_START {
        return Err((
            pos,
            EntryError::Tag {
                tag,
                place: "where a batch should start",
            },
        ));
    }
    let count = c.u32().map_err(|e| at(&c, e))?;
    c.u64().map_err(|e| at(&c, e))?;
    let mut hasher = Xxh3::new();
    let mut items = Vec::new();
    for _ in 0..count {
        let start = c.pos;
        let tag = c.u8().map_err(|e| at(&c, e))?;
        match tag {
            TAG_ITEM => {
                let value_type = c.u8().map_err(|e| at(&c, e))?;
                let compression = c.u8().map_err(|e| at(&c, e))?;
                let keyspace = c.u64().map_err(|e| at(&c, e))?;
                let key_len = c.u16().map_err(|e| at(&c, e))?;
                let value_len = c.u32().map_err(|e| at(&c, e))?;
                let stored_len = c.u32().map_err(|e| at(&c, e))?;
                let key = c.take(usize::from(key_len)).map_err(|e| at(&c, e))?;
                let stored = c
                    .take(usize::try_from(stored_len).unwrap_or(usize::MAX))
                    .map_err(|e| at(&c, e))?;
                if keep_items {
                    let value = match compression {
                        0 => stored.to_vec(),
                        1 => lz4_flex::decompress(
                            stored,
                            usize::try_from(value_len).unwrap_or(usize::MAX),
                        )
                        .map_err(|e| (start, EntryError::Lz4(e.to_string())))?,
                        other => {
                            return Err((start, EntryError::Compression(other)));
                        }
                    };
                    items.push(JournalItem {
                        keyspace,
                        key: key.to_vec(),
                        value,
                        insert: value_type == VALUE_TYPE_VALUE,
                    });
                } else if compression > 1 {
                    return Err((start, EntryError::Compression(compression)));
                }
            }
            TAG_CLEAR => {
                c.u64().map_err(|e| at(&c, e))?;
            }
            other => {
                return Err((
                    start,
                    EntryError::Tag {
                        tag: other,
                        place: "inside a batch",
                    },
                ));
            }
        }
        // The cursor read exactly these bytes, so the range is in bounds.
        #[expect(
            clippy::expect_used,
            reason = "start..c.pos is the span the cursor just read"
        )]
        let entry = bytes
            .get(start..c.pos)
            .expect("entry span read by the cursor");
        hasher.update(entry);
    }
    let end_at = c.pos;
    let tag = c.u8().map_err(|e| at(&c, e))?;
    if tag != TAG_END {
        return Err((
            end_at,
            EntryError::Tag {
                tag,
                place: "where the batch should end",
            },
        ));
    }
    let checksum = c.u64().map_err(|e| at(&c, e))?;
    let trailer = c.take(TRAILER.len()).map_err(|e| at(&c, e))?;
    if trailer != TRAILER {
        return Err((end_at, EntryError::Trailer));
    }
    if hasher.digest() != checksum {
        return Err((pos, EntryError::Checksum));
    }
    Ok((items, c.pos))
}

/// Reads a journal file. With `keep_items`, the valid batches' items are
/// kept and, past a damaged batch, every later position is tried so that
/// the batches after the damage are found too (for `recover`).
pub(crate) fn scan(path: &Path, keep_items: bool) -> std::io::Result<JournalScan> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    Ok(scan_bytes(path, &bytes, keep_items))
}

fn scan_bytes(path: &Path, bytes: &[u8], keep_items: bool) -> JournalScan {
    let mut out = JournalScan {
        file: path.to_path_buf(),
        batches: Vec::new(),
        valid_batches: 0,
        end: JournalEnd::Clean,
    };
    let mut pos = 0usize;
    while pos < bytes.len() {
        if bytes.get(pos..).is_some_and(all_zero) {
            break;
        }
        match read_batch(bytes, pos, keep_items) {
            Ok((items, next)) => {
                out.valid_batches += 1;
                if keep_items {
                    out.batches.push(JournalBatch { items });
                }
                pos = next;
            }
            Err((bad, error)) => {
                let checksum_failed = error == EntryError::Checksum;
                // Later whole batches mean this is no torn last write: a
                // crash cuts only the batch being written.
                let mut later = JournalScan {
                    file: out.file.clone(),
                    batches: Vec::new(),
                    valid_batches: 0,
                    end: JournalEnd::Clean,
                };
                resync(bytes, pos.saturating_add(1), &mut later);
                if later.valid_batches == 0 && !checksum_failed {
                    out.end = JournalEnd::TornTail { offset: pos as u64 };
                    break;
                }
                out.end = JournalEnd::Damaged {
                    offset: bad as u64,
                    detail: super::JournalProblem::Batch {
                        error,
                        batch_at: pos as u64,
                        later_batches: later.valid_batches,
                    },
                };
                out.valid_batches += later.valid_batches;
                if keep_items {
                    out.batches.extend(later.batches);
                }
                break;
            }
        }
    }
    out
}

/// Whether every byte is zero (compared a page at a time, so that the
/// preallocated tail of a journal costs little even in a debug build).
fn all_zero(bytes: &[u8]) -> bool {
    const ZEROS: [u8; 4096] = [0; 4096];
    let mut chunks = bytes.chunks_exact(ZEROS.len());
    chunks.all(|c| c == ZEROS) && chunks.remainder().iter().all(|b| *b == 0)
}

/// After damage: tries every later position for a whole batch with a valid
/// checksum and keeps reading from there. Returns where it stopped.
fn resync(bytes: &[u8], mut pos: usize, out: &mut JournalScan) -> usize {
    while pos < bytes.len() {
        match bytes
            .get(pos..)
            .and_then(|rest| rest.iter().position(|b| *b == TAG_START))
        {
            Some(0) => {}
            Some(skip) => {
                pos += skip;
                continue;
            }
            None => return bytes.len(),
        }
        match read_batch(bytes, pos, true) {
            Ok((items, next)) => {
                out.valid_batches += 1;
                out.batches.push(JournalBatch { items });
                pos = next;
            }
            Err(_) => pos += 1,
        }
    }
    pos
}

/// The journal files of a data directory, in journal-id order.
pub(crate) fn files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let id = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jnl"))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(id) = id
            && path.is_file()
        {
            found.push((id, path));
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn batch(items: &[(u64, &[u8], &[u8])]) -> Vec<u8> {
        let mut out = vec![TAG_START];
        out.extend_from_slice(&(items.len() as u32).to_le_bytes());
        out.extend_from_slice(&7u64.to_le_bytes());
        let mut hasher = Xxh3::new();
        for (ks, k, v) in items {
            let mut e = vec![TAG_ITEM, VALUE_TYPE_VALUE, 0];
            e.extend_from_slice(&ks.to_le_bytes());
            e.extend_from_slice(&(k.len() as u16).to_le_bytes());
            e.extend_from_slice(&(v.len() as u32).to_le_bytes());
            e.extend_from_slice(&(v.len() as u32).to_le_bytes());
            e.extend_from_slice(k);
            e.extend_from_slice(v);
            hasher.update(&e);
            out.extend_from_slice(&e);
        }
        out.push(TAG_END);
        out.extend_from_slice(&hasher.digest().to_le_bytes());
        out.extend_from_slice(TRAILER);
        out
    }

    /// Whether a byte lies in a batch's engine seqno, which fjall's batch
    /// checksum does not cover (nor does this reader: it is the engine's
    /// ordering, not data).
    fn in_seqno(at: usize) -> bool {
        let j = journal();
        let mut pos = 0;
        while pos < j.len() {
            if (pos + 5..pos + 13).contains(&at) {
                return true;
            }
            let (_, next) = read_batch(&j, pos, false).ok().unwrap();
            pos = next;
        }
        false
    }

    fn journal() -> Vec<u8> {
        let mut j = batch(&[(1, b"a", b"one"), (2, b"b", b"two")]);
        j.extend(batch(&[(1, b"c", b"three")]));
        j.extend(batch(&[(1, b"d", b"four")]));
        j
    }

    #[test]
    fn clean_journal_with_zero_tail() {
        let mut j = journal();
        j.extend(vec![0u8; 1000]);
        let s = scan_bytes(Path::new("0.jnl"), &j, true);
        assert_eq!(s.end, JournalEnd::Clean);
        assert_eq!(s.valid_batches, 3);
        assert_eq!(s.batches[0].items[1].value, b"two");
    }

    #[test]
    fn a_cut_last_batch_is_a_torn_tail() {
        let j = journal();
        let cut = &j[..j.len() - 6];
        let s = scan_bytes(Path::new("0.jnl"), cut, false);
        assert!(matches!(s.end, JournalEnd::TornTail { .. }), "{:?}", s.end);
        assert_eq!(s.valid_batches, 2);
    }

    #[test]
    fn a_flipped_byte_before_the_last_batch_is_damage_and_later_batches_are_found() {
        let first = batch(&[(1, b"a", b"one"), (2, b"b", b"two")]).len();
        let second = batch(&[(1, b"c", b"three")]).len();
        for at in (0..first + second).filter(|at| !in_seqno(*at)) {
            let mut j = journal();
            j[at] ^= 0x40;
            let s = scan_bytes(Path::new("0.jnl"), &j, true);
            assert!(
                matches!(s.end, JournalEnd::Damaged { .. }),
                "flip at {at}: {:?}",
                s.end
            );
            assert!(
                s.batches
                    .iter()
                    .any(|b| b.items.iter().any(|i| i.key == b"d")),
                "flip at {at}: the last batch was not found"
            );
        }
    }

    #[test]
    fn a_flipped_byte_in_the_last_batch_is_never_clean() {
        let j0 = journal();
        let last = batch(&[(1, b"d", b"four")]).len();
        for at in (j0.len() - last..j0.len()).filter(|at| !in_seqno(*at)) {
            let mut j = j0.clone();
            j[at] ^= 0x40;
            let s = scan_bytes(Path::new("0.jnl"), &j, false);
            // Damage that looks like a cut write is a torn tail; the
            // manifest check finds the records it held missing.
            assert_ne!(s.end, JournalEnd::Clean, "flip at {at}");
            assert_eq!(s.valid_batches, 2, "flip at {at}");
        }
    }

    #[test]
    fn a_bad_checksum_and_a_bad_tag_are_told_apart() {
        let mut j = batch(&[(1, b"a", b"one")]);
        let value_at = j.len() - TRAILER.len() - 8 - 1 - 3;
        j[value_at] ^= 0x01;
        assert_eq!(
            read_batch(&j, 0, false).err(),
            Some((0, EntryError::Checksum))
        );
        let mut j = batch(&[(1, b"a", b"one")]);
        j[0] = 9;
        assert_eq!(
            read_batch(&j, 0, false).err(),
            Some((
                0,
                EntryError::Tag {
                    tag: 9,
                    place: "where a batch should start"
                }
            ))
        );
        let mut j = batch(&[(1, b"a", b"one")]);
        j[13 + 2] = 7;
        assert_eq!(
            read_batch(&j, 0, false).err(),
            Some((13, EntryError::Compression(7)))
        );
        // A checksum failure is damage even with nothing after it.
        let mut j = batch(&[(1, b"a", b"one")]);
        j[value_at] ^= 0x01;
        let s = scan_bytes(Path::new("0.jnl"), &j, false);
        assert!(
            matches!(
                &s.end,
                JournalEnd::Damaged {
                    offset: 0,
                    detail: super::super::JournalProblem::Batch {
                        error: EntryError::Checksum,
                        batch_at: 0,
                        ..
                    }
                }
            ),
            "{:?}",
            s.end
        );
    }
}
