//! The dense view: the unit vectors of one tenant's derived embeddings of
//! one embedder (operator, configuration hash, label), in log order, with
//! the record each one embeds, its kind and its thread. Persisted as a
//! snapshot (`docs/format.md` §2.2, dense view) and refreshed from the
//! `Embedding` records appended after its last sequence; a view refreshed
//! along the way and one built from the first record hold the same rows in
//! the same order, bit for bit ([`DenseView::encode`]).

use std::collections::BTreeMap;

use strataflow_record::{Digest, RecordId};

use crate::snapshot::{Decoder, Encoder, SnapshotError, SnapshotProblem};
use crate::vector::{ExactIndex, Hit, VectorConfig, VectorError, VectorIndex};

/// Name of the dense view (the first part of its key, and its name in the
/// `views` report).
pub const DENSE_VIEW: &str = "dense";

/// Format version of a dense view snapshot (its first byte). Bump it
/// whenever the layout of `docs/format.md` §dense view changes: a snapshot
/// of another version is rebuilt, never read.
pub const DENSE_VIEW_VERSION: u8 = 1;

/// blake3 key-derivation context of the snapshot's checksum.
const CHECKSUM_CONTEXT: &str = "strataflow dense view snapshot v1";

/// blake3 key-derivation context of the view's digest.
const DIGEST_CONTEXT: &str = "strataflow view dense v1";

/// What kind of record a row embeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A message.
    Message,
    /// A block summary.
    BlockSummary,
    /// An event.
    Event,
}

impl SourceKind {
    /// Its code in the snapshot.
    fn code(self) -> u8 {
        match self {
            Self::Message => 0,
            Self::BlockSummary => 1,
            Self::Event => 2,
        }
    }

    fn of_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Message),
            1 => Some(Self::BlockSummary),
            2 => Some(Self::Event),
            _ => None,
        }
    }

    /// `message`, `block_summary` or `event`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::BlockSummary => "block_summary",
            Self::Event => "event",
        }
    }
}

/// The embedder whose vectors a view holds: only vectors of this operator,
/// configuration and label enter it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenseIdentity {
    /// The embedder, `name@version`.
    pub operator: String,
    /// Its configuration hash.
    pub config: Digest,
    /// The label's name, `<provider>/<model>`.
    pub label: String,
    /// The label's dimensions.
    pub dimensions: usize,
}

impl DenseIdentity {
    /// The view's key in the log's `views` keyspace:
    /// `dense/<operator>/<config short>/<label>`.
    pub fn key(&self) -> String {
        format!(
            "{DENSE_VIEW}/{}/{}/{}",
            self.operator,
            self.config.short(),
            self.label
        )
    }
}

/// What a row is besides its vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RowMeta {
    /// The `Embedding` record (its id pins the values).
    embedding: RecordId,
    kind: SourceKind,
    /// Number of the source's thread in [`DenseView::threads`].
    thread: u32,
}

/// One match of [`DenseView::search`].
#[derive(Clone, Debug, PartialEq)]
pub struct DenseMatch {
    /// The record the vector embeds.
    pub source: RecordId,
    /// Its kind.
    pub kind: SourceKind,
    /// Cosine similarity with the query, from −1 to 1.
    pub similarity: f32,
}

/// The rows of one tenant and one embedder.
#[derive(Clone, Debug)]
pub struct DenseView {
    tenant: String,
    identity: DenseIdentity,
    /// Last log sequence applied (or gone past).
    last_seq: u64,
    /// Thread names by number, in the order first met.
    threads: Vec<String>,
    thread_numbers: BTreeMap<String, u32>,
    /// Source record → what its row is.
    meta: BTreeMap<RecordId, RowMeta>,
    /// The unit rows, by source record, in log order.
    rows: ExactIndex<RecordId>,
}

impl DenseView {
    /// An empty view (what a rebuild starts from).
    pub fn new(tenant: &str, identity: DenseIdentity) -> Self {
        Self {
            tenant: tenant.to_owned(),
            rows: ExactIndex::new(identity.dimensions),
            identity,
            last_seq: 0,
            threads: Vec::new(),
            thread_numbers: BTreeMap::new(),
            meta: BTreeMap::new(),
        }
    }

    /// The tenant.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The embedder.
    pub fn identity(&self) -> &DenseIdentity {
        &self.identity
    }

    /// Last log sequence applied or gone past.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Marks every record up to `seq` as seen (records that are not this
    /// view's).
    pub fn skip_to(&mut self, seq: u64) {
        self.last_seq = self.last_seq.max(seq);
    }

    /// Applies the `Embedding` record `embedding` (log sequence `seq`) of
    /// `source`, a record of `kind` in `thread`: its vector becomes the
    /// source's row (scaled to unit length; a second embedding of the same
    /// source replaces the row in place). A zero vector has no direction
    /// and adds no row (`Ok(false)`).
    ///
    /// # Errors
    /// [`VectorError`] for a vector of the wrong length or not finite; the
    /// view is unchanged but for its sequence.
    pub fn apply(
        &mut self,
        seq: u64,
        source: RecordId,
        embedding: RecordId,
        kind: SourceKind,
        thread: &str,
        values: &[f32],
    ) -> Result<bool, VectorError> {
        self.skip_to(seq);
        match self.rows.insert(source, values) {
            Ok(()) => {}
            Err(VectorError::Zero) => return Ok(false),
            Err(e) => return Err(e),
        }
        let thread = match self.thread_numbers.get(thread) {
            Some(&n) => n,
            None => {
                // default: over 4 billion threads share the last number.
                let n = u32::try_from(self.threads.len()).unwrap_or(u32::MAX);
                self.threads.push(thread.to_owned());
                self.thread_numbers.insert(thread.to_owned(), n);
                n
            }
        };
        self.meta.insert(
            source,
            RowMeta {
                embedding,
                kind,
                thread,
            },
        );
        Ok(true)
    }

    /// blake3 hex over the identity and, row by row in order, the source
    /// id, the `Embedding` id (which pins the values: no float is hashed),
    /// the kind and the thread's name.
    pub fn digest(&self) -> String {
        let mut h = blake3::Hasher::new_derive_key(DIGEST_CONTEXT);
        let mut text = |s: &str| {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        text(&self.tenant);
        text(&self.identity.operator);
        text(&self.identity.label);
        h.update(self.identity.config.as_bytes());
        h.update(&(self.identity.dimensions as u64).to_le_bytes());
        for source in self.rows.rows().0 {
            h.update(source.as_bytes());
            if let Some(m) = self.meta.get(source) {
                h.update(m.embedding.as_bytes());
                h.update(&[m.kind.code()]);
                // default: every row's thread number is in the table.
                let thread = self
                    .threads
                    .get(m.thread as usize)
                    .map_or("", String::as_str);
                h.update(&(thread.len() as u64).to_le_bytes());
                h.update(thread.as_bytes());
            }
        }
        h.finalize().to_hex().to_string()
    }

    /// The snapshot (`docs/format.md` §2.2, dense view): version byte,
    /// checksum, then the body.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::new();
        e.str(&self.tenant);
        e.str(&self.identity.operator);
        e.id(&self.identity.config);
        e.str(&self.identity.label);
        e.len(self.identity.dimensions);
        e.u64(self.last_seq);
        e.len(self.threads.len());
        for t in &self.threads {
            e.str(t);
        }
        let (sources, values) = self.rows.rows();
        e.len(sources.len());
        for source in sources {
            e.id(source);
            // default: every row has its meta (both are written by `apply`).
            let m = self.meta.get(source).copied().unwrap_or(RowMeta {
                embedding: RecordId([0; 32]),
                kind: SourceKind::Message,
                thread: 0,
            });
            e.id(&m.embedding);
            e.u8(m.kind.code());
            e.u32(m.thread);
        }
        let mut raw = Vec::with_capacity(values.len() * 4);
        for v in values {
            raw.extend_from_slice(&v.to_le_bytes());
        }
        e.raw(&raw);
        let body = e.finish();
        let mut out = Vec::with_capacity(body.len() + 33);
        out.push(DENSE_VIEW_VERSION);
        out.extend_from_slice(blake3::derive_key(CHECKSUM_CONTEXT, &body).as_slice());
        out.extend_from_slice(&body);
        out
    }

    /// Reads [`DenseView::encode`]'s bytes, refusing a snapshot of another
    /// version, a checksum that does not match, another tenant or
    /// embedder, and any inconsistent table.
    ///
    /// # Errors
    /// [`SnapshotError`] saying where and what.
    pub fn decode(
        bytes: &[u8],
        tenant: &str,
        identity: &DenseIdentity,
    ) -> Result<Self, SnapshotError> {
        let mut d = Decoder::new(bytes);
        let version = d.u8()?;
        if version != DENSE_VIEW_VERSION {
            return Err(d.invalid(format!(
                "format version {version}; this build reads {DENSE_VIEW_VERSION}"
            )));
        }
        let checksum: [u8; 32] = d.array()?;
        let body = d.raw(d.remaining())?;
        if blake3::derive_key(CHECKSUM_CONTEXT, body) != checksum {
            return Err(d.invalid("checksum mismatch"));
        }
        let mut d = Decoder::new(body);
        if d.str()? != tenant {
            return Err(d.invalid("snapshot of another tenant"));
        }
        let operator = d.string()?;
        let config = d.id()?;
        let label = d.string()?;
        let dimensions = usize::try_from(d.u64()?).map_err(|_| d.invalid("dimensions"))?;
        let found = DenseIdentity {
            operator,
            config,
            label,
            dimensions,
        };
        if found != *identity {
            return Err(d.invalid(format!(
                "snapshot of embedder {} {} ({} dimensions)",
                found.operator, found.label, found.dimensions
            )));
        }
        let mut view = Self::new(tenant, found);
        view.last_seq = d.u64()?;
        for _ in 0..d.count(1)? {
            let name = d.string()?;
            let n = u32::try_from(view.threads.len()).map_err(|_| {
                d.invalid(SnapshotProblem::TooManyRows {
                    table: "threads",
                    row: view.threads.len(),
                })
            })?;
            if view.thread_numbers.insert(name.clone(), n).is_some() {
                return Err(d.invalid(SnapshotProblem::Repeated {
                    table: "thread",
                    name,
                }));
            }
            view.threads.push(name);
        }
        let rows = d.count(66)?;
        let mut sources = Vec::with_capacity(rows);
        for _ in 0..rows {
            let source = d.id()?;
            let embedding = d.id()?;
            let kind = d.u8()?;
            let kind = SourceKind::of_code(kind)
                .ok_or_else(|| d.invalid(format!("source kind {kind}")))?;
            let thread = d.u32()?;
            if thread as usize >= view.threads.len() {
                return Err(d.invalid(format!("thread number {thread}")));
            }
            let meta = RowMeta {
                embedding,
                kind,
                thread,
            };
            if view.meta.insert(source, meta).is_some() {
                return Err(d.invalid(format!("row of {source} repeated")));
            }
            sources.push(source);
        }
        let values = rows
            .checked_mul(dimensions)
            .and_then(|n| n.checked_mul(4))
            .ok_or_else(|| d.invalid("rows × dimensions overflows"))?;
        let raw = d.raw(values)?;
        d.finish()?;
        let values = raw
            .chunks_exact(4)
            // default: `chunks_exact(4)` gives 4 bytes.
            .map(|b| b.first_chunk::<4>().map_or(0.0, |a| f32::from_le_bytes(*a)))
            .collect();
        view.rows = ExactIndex::from_unit_rows(dimensions, sources, values)
            .map_err(|e| d.invalid(e.to_string()))?;
        Ok(view)
    }

    /// The `k` rows most like `query` (exact cosine, or the HNSW graph of
    /// [`VectorIndex`] above `config.approximate_above` rows), of `thread`
    /// only when one is given: most similar first, equal similarities by
    /// source id. Consumes the view (its rows become the index's).
    ///
    /// # Errors
    /// [`VectorError`] for a query of the wrong length, not finite or zero,
    /// or a graph that cannot be built.
    pub fn search(
        self,
        query: &[f32],
        k: usize,
        thread: Option<&str>,
        config: &VectorConfig,
    ) -> Result<Vec<DenseMatch>, VectorError> {
        let Self {
            meta,
            rows,
            thread_numbers,
            ..
        } = self;
        let wanted = match thread {
            None => None,
            Some(t) => match thread_numbers.get(t) {
                Some(&n) => Some(n),
                // A thread with no row: nothing matches.
                None => return Ok(Vec::new()),
            },
        };
        let keep = |id: &RecordId| meta.get(id).is_some_and(|m| Some(m.thread) == wanted);
        let filter: Option<&dyn Fn(&RecordId) -> bool> = match wanted {
            Some(_) => Some(&keep),
            None => None,
        };
        let index = VectorIndex::build(rows, config)?;
        Ok(index
            .search(query, k, filter)?
            .into_iter()
            .filter_map(|Hit { id, similarity }| {
                meta.get(&id).map(|m| DenseMatch {
                    source: id,
                    kind: m.kind,
                    similarity,
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use proptest::prelude::*;

    use super::*;

    fn identity() -> DenseIdentity {
        DenseIdentity {
            operator: "embedder.word-hash@1".into(),
            config: RecordId([9; 32]),
            label: "strataflow/word-hash-8".into(),
            dimensions: 3,
        }
    }

    fn id(n: u8) -> RecordId {
        RecordId([n; 32])
    }

    /// One applied embedding: (source, kind, thread, values).
    type Row = (u8, u8, u8, [i8; 3]);

    fn fold(view: &mut DenseView, seq0: u64, rows: &[Row]) {
        for (i, (source, kind, thread, v)) in rows.iter().enumerate() {
            let values: Vec<f32> = v.iter().map(|x| f32::from(*x) / 7.0).collect();
            view.apply(
                seq0 + i as u64,
                id(*source),
                id(source.wrapping_add(100)),
                SourceKind::of_code(kind % 3).unwrap(),
                &format!("thread {}", thread % 3),
                &values,
            )
            .unwrap();
        }
    }

    proptest! {
        /// A view refreshed in two steps, saved and read back between them,
        /// has the bytes and digest of one folded in one go.
        #[test]
        fn a_view_refreshed_in_steps_equals_one_folded_at_once(
            rows in proptest::collection::vec((0u8..12, 0u8..3, 0u8..3, proptest::array::uniform3(-7i8..8)), 0..30),
            cut in 0usize..30,
        ) {
            let cut = cut.min(rows.len());
            let mut whole = DenseView::new("acme", identity());
            fold(&mut whole, 1, &rows);
            let mut first = DenseView::new("acme", identity());
            fold(&mut first, 1, &rows[..cut]);
            let mut resumed = DenseView::decode(&first.encode(), "acme", &identity()).unwrap();
            fold(&mut resumed, 1 + cut as u64, &rows[cut..]);
            prop_assert_eq!(resumed.encode(), whole.encode());
            prop_assert_eq!(resumed.digest(), whole.digest());
        }
    }

    #[test]
    fn a_snapshot_of_another_tenant_embedder_or_version_or_damaged_is_refused() {
        let mut view = DenseView::new("acme", identity());
        fold(
            &mut view,
            1,
            &[
                (1, 0, 0, [1, 2, 3]),
                (2, 2, 1, [0, 0, 0]),
                (3, 1, 1, [3, -1, 0]),
            ],
        );
        // The zero vector adds no row.
        assert_eq!(view.len(), 2);
        let bytes = view.encode();
        let back = DenseView::decode(&bytes, "acme", &identity()).unwrap();
        assert_eq!(back.encode(), bytes);
        assert_eq!(back.last_seq(), 3);
        let err = DenseView::decode(&bytes, "globex", &identity()).unwrap_err();
        assert!(err.to_string().contains("another tenant"), "{err}");
        let other = DenseIdentity {
            label: "other/model".into(),
            ..identity()
        };
        let err = DenseView::decode(&bytes, "acme", &other).unwrap_err();
        assert!(err.to_string().contains("embedder"), "{err}");
        let mut damaged = bytes.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        let err = DenseView::decode(&damaged, "acme", &identity()).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        let mut older = bytes.clone();
        older[0] = DENSE_VIEW_VERSION + 1;
        let err = DenseView::decode(&older, "acme", &identity()).unwrap_err();
        assert!(err.to_string().contains("format version"), "{err}");
        assert!(DenseView::decode(&bytes[..40], "acme", &identity()).is_err());
    }

    #[test]
    fn a_thread_filter_keeps_only_its_rows_and_ties_go_by_source_id() {
        let mut view = DenseView::new("acme", identity());
        fold(
            &mut view,
            1,
            &[
                (5, 0, 0, [1, 0, 0]),
                (4, 0, 1, [1, 0, 0]),
                (3, 2, 0, [0, 1, 0]),
            ],
        );
        let config = VectorConfig::default();
        let all = view
            .clone()
            .search(&[1.0, 0.0, 0.0], 10, None, &config)
            .unwrap();
        let sources: Vec<RecordId> = all.iter().map(|m| m.source).collect();
        assert_eq!(sources, vec![id(4), id(5), id(3)]);
        let t0 = view
            .clone()
            .search(&[1.0, 0.0, 0.0], 10, Some("thread 0"), &config)
            .unwrap();
        let sources: Vec<RecordId> = t0.iter().map(|m| m.source).collect();
        assert_eq!(sources, vec![id(5), id(3)]);
        assert_eq!(t0[1].kind, SourceKind::Event);
        assert!(
            view.search(&[1.0, 0.0, 0.0], 10, Some("nowhere"), &config)
                .unwrap()
                .is_empty()
        );
    }
}
