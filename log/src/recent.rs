//! What the store's writer remembers of its latest batches, so that a
//! backfill's checks rarely reach the index keyspaces. It is a cache: losing
//! it changes nothing but speed, and it only holds facts that stay true
//! (records are never removed, and only the writer changes a head or adds
//! an external id).
//!
//! - **Message ids** with their sequence numbers, in two generations of at
//!   most [`RECENT_MESSAGES`]: the parents a backfill cites from earlier
//!   batches (a block's messages, an event's sources) are found here
//!   instead of in the `ids` keyspace (the other parents are in the same
//!   batch). A generation covers the messages of 9,000 threads interleaved
//!   25 deep.
//! - **Thread heads** of the threads advanced lately (at most
//!   [`RECENT_HEADS`]), taken in after each commit, so a cached head is the
//!   stored head.
//! - **Threads born here**: threads that had no message when this writer
//!   first appended to them, with a Bloom filter of every external-id key
//!   this writer appended. Every external id of such a thread went through
//!   the filter, and a Bloom filter has no false negatives, so when it says
//!   "absent" the key is not in the log and the lookup is skipped; "maybe"
//!   falls back to the lookup.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashSet};

use crate::head::ThreadHead;
use crate::id::RecordId;

/// Message ids per generation: 7/8 of 2^18, the most a hash table of 2^18
/// buckets holds before it doubles (hashbrown's load factor), so a full
/// generation takes about 11 MB (2^18 × 41 bytes) instead of twice that
/// for its last eighth. Two generations of 2^19 (43 MB) took about 10 MB
/// more of a 1 GB export's peak RSS (`--no-derive`), with no difference in
/// its message rate or `ingest`'s.
const RECENT_MESSAGES: usize = (1 << 18) / 8 * 7;

/// Thread heads kept (emptied when full).
const RECENT_HEADS: usize = 1 << 16;

/// Threads born here that are remembered (past this, the set and the
/// filter start over: only the speed-up is lost).
const BORN_THREADS: usize = 1 << 20;

/// Bits of one layer of the external-id filter (1 MiB).
const LAYER_BITS: usize = 1 << 23;

/// Keys per layer: about 10 bits per key, under 1% false positives.
const LAYER_KEYS: usize = LAYER_BITS / 10;

/// Probes per key.
const PROBES: u64 = 7;

/// Layers before the filter starts over (64 MiB).
const MAX_LAYERS: usize = 64;

/// The writer's memory of its latest batches.
#[derive(Default)]
pub(crate) struct Recent {
    current: HashMap<RecordId, u64>,
    previous: HashMap<RecordId, u64>,
    /// Heads of the threads advanced lately, by thread key.
    pub(crate) heads: HashMap<Vec<u8>, ThreadHead>,
    born: HashSet<Vec<u8>>,
    external: ExternalFilter,
}

impl Recent {
    /// Whether a backfill filled the cache (a whole generation of message
    /// ids, or a layer of the external-id filter): what
    /// [`crate::Store::trim_writer_cache`] gives back.
    pub(crate) fn is_filled(&self) -> bool {
        !self.previous.is_empty() || self.external.layers.len() > 1
    }

    /// The sequence number of a message appended lately.
    pub(crate) fn get(&self, id: &RecordId) -> Option<&u64> {
        self.current.get(id).or_else(|| self.previous.get(id))
    }

    /// True when the external-id key `key` of the thread `prefix` is
    /// certainly not in the log (the thread was born here and the filter
    /// has never seen the key).
    pub(crate) fn surely_new_external(&self, prefix: &[u8], key: &[u8]) -> bool {
        self.born.contains(prefix) && !self.external.may_contain(key)
    }

    /// Takes in what a committed batch appended: its messages, the heads it
    /// wrote, the threads it started and its external-id keys.
    pub(crate) fn remember(
        &mut self,
        messages: &[(RecordId, u64)],
        heads: &BTreeMap<Vec<u8>, ThreadHead>,
        born: &[Vec<u8>],
        external: impl Iterator<Item = impl AsRef<[u8]>>,
    ) {
        if self.current.len() + messages.len() > RECENT_MESSAGES {
            // The old previous generation is freed before the new one is
            // reserved at its full size (no doubling on the way up: a
            // writer that filled one generation fills the next).
            self.previous = std::mem::take(&mut self.current);
            self.current.reserve(RECENT_MESSAGES);
        }
        self.current.extend(messages.iter().copied());
        if self.heads.len() + heads.len() > RECENT_HEADS {
            self.heads.clear();
        }
        self.heads
            .extend(heads.iter().map(|(prefix, head)| (prefix.clone(), *head)));
        if self.born.len() + born.len() > BORN_THREADS || self.external.is_full() {
            // Every external id of a born thread must be in the filter: the
            // two start over together.
            self.born.clear();
            self.external = ExternalFilter::default();
        }
        // Keys first, then the threads: a thread is never born without its
        // keys in the filter.
        for key in external {
            self.external.insert(key.as_ref());
        }
        self.born.extend(born.iter().cloned());
    }
}

/// A Bloom filter that grows by layers of [`LAYER_BITS`].
#[derive(Default)]
struct ExternalFilter {
    layers: Vec<Vec<u64>>,
    /// Keys in the last layer.
    in_last: usize,
}

impl ExternalFilter {
    fn is_full(&self) -> bool {
        self.layers.len() >= MAX_LAYERS
    }

    fn insert(&mut self, key: &[u8]) {
        if self.layers.is_empty() || self.in_last >= LAYER_KEYS {
            self.layers.push(vec![0u64; LAYER_BITS / 64]);
            self.in_last = 0;
        }
        let (a, b) = hashes(key);
        if let Some(layer) = self.layers.last_mut() {
            for i in 0..PROBES {
                let bit = bit_of(a, b, i);
                if let Some(word) = layer.get_mut(bit / 64) {
                    *word |= 1 << (bit % 64);
                }
            }
            self.in_last += 1;
        }
    }

    fn may_contain(&self, key: &[u8]) -> bool {
        let (a, b) = hashes(key);
        self.layers.iter().any(|layer| {
            (0..PROBES).all(|i| {
                let bit = bit_of(a, b, i);
                layer
                    .get(bit / 64)
                    .is_some_and(|w| w & (1 << (bit % 64)) != 0)
            })
        })
    }
}

/// Two independent 64-bit hashes of a key: the halves of its 128-bit XXH3
/// (fixed, so the filter behaves the same in every run; one pass over the
/// key, where two SipHash passes were the writer's largest single cost
/// after the journal).
fn hashes(key: &[u8]) -> (u64, u64) {
    let h = xxhash_rust::xxh3::xxh3_128(key);
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the two halves of a 128-bit hash, each kept whole"
    )]
    let (a, b) = (h as u64, (h >> 64) as u64);
    (a, b | 1)
}

/// The `i`-th probe (double hashing) as a bit index of a layer.
fn bit_of(a: u64, b: u64, i: u64) -> usize {
    let h = a.wrapping_add(i.wrapping_mul(b));
    usize::try_from(h % LAYER_BITS as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_has_no_false_negatives_and_few_false_positives() {
        let mut f = ExternalFilter::default();
        let keys: Vec<Vec<u8>> = (0..LAYER_KEYS + 1000)
            .map(|i| format!("thread\0m{i}").into_bytes())
            .collect();
        for k in &keys {
            f.insert(k);
        }
        assert_eq!(f.layers.len(), 2, "a second layer once the first is full");
        assert!(keys.iter().all(|k| f.may_contain(k)));
        let absent = (0..100_000)
            .filter(|i| f.may_contain(format!("other\0x{i}").as_bytes()))
            .count();
        assert!(absent < 2_000, "{absent} false positives in 100000");
    }

    #[test]
    fn only_born_threads_skip_the_lookup() {
        let mut r = Recent::default();
        r.remember(
            &[],
            &BTreeMap::new(),
            &[b"born".to_vec()],
            [b"born\0m1".as_slice(), b"old\0m1".as_slice()].into_iter(),
        );
        assert!(!r.surely_new_external(b"born", b"born\0m1"));
        assert!(r.surely_new_external(b"born", b"born\0m2"));
        assert!(!r.surely_new_external(b"old", b"old\0m2"));
    }

    #[test]
    fn a_generation_fills_one_table_size_and_the_last_two_answer() {
        let id = |i: u64| {
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&i.to_le_bytes());
            RecordId(bytes)
        };
        let mut r = Recent::default();
        let batch = 4096u64;
        let total = (3 * RECENT_MESSAGES) as u64;
        let mut next = 0u64;
        while next < total {
            let messages: Vec<(RecordId, u64)> = (next..next + batch).map(|i| (id(i), i)).collect();
            r.remember(
                &messages,
                &BTreeMap::new(),
                &[],
                std::iter::empty::<&[u8]>(),
            );
            next += batch;
            // Never past the table a generation is sized for (a doubling
            // would take twice the memory for the last eighth).
            assert!(r.current.capacity() <= RECENT_MESSAGES, "at {next}");
            assert!(r.previous.capacity() <= RECENT_MESSAGES, "at {next}");
        }
        assert_eq!(r.get(&id(next - 1)), Some(&(next - 1)));
        // The oldest of the two generations kept still answers; what came
        // before them is forgotten (a cache: the lookup goes to the index).
        let kept = r.current.len() + r.previous.len();
        assert!(kept > RECENT_MESSAGES);
        assert_eq!(r.get(&id(next - kept as u64)), Some(&(next - kept as u64)));
        assert_eq!(r.get(&id(next - kept as u64 - 1)), None);
    }
}
