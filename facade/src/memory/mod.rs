//! [`Memory`]: one data directory, opened for reading and writing.

use std::path::{Path, PathBuf};

use strataflow_log::record::{Record, RecordKind};
use strataflow_log::recover::RecoveryReport;
use strataflow_log::{AuditReport, RecordId, Store, StoredRecord, TableCheck, ThreadHead};
use strataflow_operators::layers::estimate_tokens;
use strataflow_operators::sealer::{DEFAULT_TURNS_PER_BLOCK, Sealer};
use strataflow_pipeline::ingest::{
    self, IngestError, IngestOptions, IngestStats, OnInvalid, Source,
};
use strataflow_pipeline::source::jsonl::{JsonlChunks, JsonlReader};
use strataflow_pipeline::source::{SourceError, SourceItem, locomo};

mod dense;
mod derivation;
mod error;
mod evidence;
mod expand;
mod export;
mod external_import;
mod governance;
mod keyed;
mod live_views;
mod models;
mod plan;
mod search;
mod tenant;
mod tenant_stats;
mod views;

pub use dense::{DEFAULT_DENSE_LIMIT, DenseHit, DenseResponse, EmbedStats};
pub use derivation::{
    DerivationStatus, EmbedderStatus, EventListing, FailureInfo, OperatorStatus, ProfileEvents,
};
pub use error::{
    ConfigError, EvidenceError, Expected, FilterProblem, ImportError, MemoryError, ProfileError,
    QueryError,
};
pub use evidence::{AssessOutcome, UseOutcome};
pub use expand::{BlockView, ExpandedEvent, ExpandedNode, SourceMessage};
pub use external_import::{
    ExternalImportOptions, ExternalImportReport, IMPORT_BLOCK_TAG, ReportedDecision, UndoReport,
};
pub use keyed::{
    DEFAULT_PURGE_LIMIT, DEFAULT_RECALL_LIMIT, EMBEDDER_CONFIG, EmbeddingService, KeyedMemoryError,
    MAX_KEY_BYTES, MAX_RECALL_LIMIT, PurgeOptions, PurgeReport, RecallMatch, RecallOptions,
    RememberEntry, Remembered, StoredMemory, embedder_from_spec, older_than_cutoff, parse_duration,
};
pub use models::ModelCallTotals;
pub use plan::{DerivationPlan, OperatorPlan};
pub use search::{
    Channel, LEXICAL_FIRST_WORDS, SearchHit, SearchRequest, SearchResponse, Searcher,
};
pub use tenant::{
    ContextOptions, EventsQuery, ExpandOptions, SearchOptions, TenantMemory, ViewsOptions,
};
pub use tenant_stats::TenantStats;
pub use views::ViewReport;

/// Configuration key of the block size in turns.
const BLOCK_TURNS: &str = "block_turns";

/// Counts of what the data directory holds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Records per kind (every kind listed).
    pub records: std::collections::BTreeMap<&'static str, u64>,
    /// Total records.
    pub total_records: u64,
    /// Last sequence number.
    pub last_seq: u64,
    /// Distinct tenants.
    pub tenants: u64,
    /// Threads.
    pub threads: u64,
    /// Messages.
    pub messages: u64,
    /// Sealed blocks.
    pub blocks: u64,
    /// Messages not yet in a block.
    pub open_tail_messages: u64,
    /// Bytes on disk.
    pub bytes_on_disk: u64,
    /// Turns per block of this data directory.
    pub block_turns: u32,
}

/// One block as listed by [`TenantMemory::blocks`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockInfo {
    /// Block id.
    pub id: RecordId,
    /// 1-based ordinal.
    pub ordinal: u32,
    /// First turn.
    pub start_turn: u32,
    /// Last turn.
    pub end_turn: u32,
    /// External ids of its messages, in order.
    pub messages: Vec<String>,
    /// L4 length in characters.
    pub l4_chars: usize,
    /// L4 estimated tokens.
    pub l4_tokens: usize,
    /// L3 length in characters.
    pub l3_chars: usize,
    /// L3 estimated tokens.
    pub l3_tokens: usize,
}

/// The blocks and open tail of one thread.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ThreadBlocks {
    /// Tenant.
    pub tenant: String,
    /// Thread.
    pub thread: String,
    /// Blocks in order.
    pub blocks: Vec<BlockInfo>,
    /// External ids of the messages not yet in a block, in order.
    pub open_tail: Vec<String>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// A data directory: the log plus the operators configured for it.
///
/// Directory-wide calls (open, ingest, derive, profiles, stats, audit,
/// export) are methods of `Memory`; the per-tenant verbs (search, expand,
/// context, assess, use, governance, events, graph, views) are methods of
/// the [`TenantMemory`] that [`Memory::tenant`] returns.
///
/// ```
/// use strataflow::pipeline::ingest::OnInvalid;
/// use strataflow::{Channel, Memory, SearchOptions, SearchRequest};
///
/// let dir = std::env::temp_dir().join(format!(
///     "strataflow-doc-{}-{}",
///     std::process::id(),
///     std::time::SystemTime::now()
///         .duration_since(std::time::UNIX_EPOCH)
///         .map_or(0, |d| d.as_nanos())
/// ));
/// std::fs::create_dir_all(&dir)?;
/// let messages = dir.join("messages.jsonl");
/// std::fs::write(
///     &messages,
///     concat!(
///         r#"{"tenant": "acme", "thread": "t1", "id": "m1", "role": "user", "#,
///         r#""speaker": "Ana", "content": "We are moving the office to Lisbon in May.", "#,
///         r#""ts": "2024-04-20T19:03:28+02:00"}"#,
///         "\n",
///         r#"{"tenant": "acme", "thread": "t1", "id": "m2", "role": "assistant", "#,
///         r#""content": "Noted: the office moves to Lisbon in May.", "#,
///         r#""ts": "2024-04-20T19:03:40+02:00"}"#,
///         "\n",
///     ),
/// )?;
///
/// // Blocks of 2 turns, so that the two messages seal a block and derive.
/// let memory = Memory::open_with(dir.join("data"), Some(2))?;
/// let options = memory.ingest_options()?;
/// let stats = memory.ingest_jsonl(&messages, &options, OnInvalid::Refuse, &mut |_| {})?;
/// assert_eq!(stats.stored, 2);
///
/// let acme = memory.tenant("acme");
/// let request = SearchRequest {
///     query: "Lisbon office".into(),
///     ..SearchRequest::default()
/// };
/// let raw = SearchOptions {
///     channel: Channel::Raw,
///     ..SearchOptions::default()
/// };
/// let found = acme.search(&request, &raw)?;
/// assert!(found.hits.iter().any(|h| h.source_messages == ["m1"]));
/// // Every search is recorded as a retrieval batch.
/// assert!(found.batch.is_some());
/// // Another tenant sees none of it.
/// assert!(memory.default_tenant().search(&request, &raw)?.hits.is_empty());
///
/// drop(memory);
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Memory {
    store: std::sync::Arc<Store>,
    sealer: Sealer,
    registry: strataflow_operators::profile::Registry,
    gateways: models::Gateways,
    /// Held while a retrieval batch takes its ordinal and is appended.
    batch_lock: std::sync::Mutex<()>,
    /// A replica ([`Memory::set_replica`]) records no retrieval batch.
    replica: bool,
    /// Records a segment of a persisted view applies before it is sealed
    /// ([`Memory::set_view_segment_records`]).
    view_segment_records: u64,
}

impl Memory {
    /// Opens (creating if needed) the data directory. A new directory gets
    /// the default block size of 12 turns.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, MemoryError> {
        Self::open_with(dir, None)
    }

    /// Opens a data directory that must already exist (for commands that
    /// only read: a mistyped path is an error, not a new empty directory).
    /// A directory that holds no store is [`strataflow_log::StoreError::NotAStore`] and
    /// nothing is created in it.
    pub fn open_existing(dir: impl AsRef<Path>) -> Result<Self, MemoryError> {
        Self::open_existing_with(dir, TableCheck::Changed)
    }

    /// [`Memory::open_existing`] choosing how many of the storage engine's
    /// tables to verify first ([`TableCheck::All`] for `audit --deep`).
    pub fn open_existing_with(
        dir: impl AsRef<Path>,
        tables: TableCheck,
    ) -> Result<Self, MemoryError> {
        Self::from_store(Store::open_existing(dir, tables)?, None)
    }

    /// Opens an existing directory for a deep audit
    /// ([`Store::open_for_deep_audit`]): a damaged table is returned beside
    /// the memory instead of refusing the open.
    pub fn open_for_deep_audit(
        dir: impl AsRef<Path>,
    ) -> Result<(Self, Option<strataflow_log::Damage>), MemoryError> {
        let (store, damage) = Store::open_for_deep_audit(dir)?;
        Ok((Self::from_store(store, None)?, damage))
    }

    /// Copies every intact record of a damaged data directory `from`, in
    /// sequence order, into the new directory `to`, rebuilds every
    /// tenant's views there, and reports what was lost. `from` is never
    /// written.
    pub fn recover(from: &Path, to: &Path) -> Result<RecoveryReport, MemoryError> {
        let report = strataflow_log::recover::recover(from, to)?;
        let memory = Self::open_existing(to)?;
        memory.tenants_views(None, &memory.tenants()?, false)?;
        Ok(report)
    }

    /// Opens the data directory, setting the block size if it has none yet.
    /// Refuses to change the block size of a directory that has messages.
    pub fn open_with(dir: impl AsRef<Path>, block_turns: Option<u32>) -> Result<Self, MemoryError> {
        Self::from_store(Store::open(dir)?, block_turns)
    }

    fn from_store(store: Store, block_turns: Option<u32>) -> Result<Self, MemoryError> {
        let stored = match store.config(BLOCK_TURNS)? {
            Some(text) => Some(
                text.parse::<u32>()
                    .map_err(|_| ConfigError::BlockTurnsUnreadable { stored: text })?,
            ),
            None => None,
        };
        if block_turns == Some(0) {
            return Err(ConfigError::BlockTurnsZero.into());
        }
        let turns = match (stored, block_turns) {
            (Some(s), Some(wanted)) if s != wanted => {
                if store.count(RecordKind::Message)? > 0 {
                    return Err(ConfigError::BlockTurnsChange { stored: s, wanted }.into());
                }
                store.set_config(BLOCK_TURNS, &wanted.to_string())?;
                wanted
            }
            (Some(s), _) => s,
            (None, wanted) => {
                let turns = wanted.unwrap_or(DEFAULT_TURNS_PER_BLOCK);
                store.set_config(BLOCK_TURNS, &turns.to_string())?;
                turns
            }
        };
        derivation::record_default_profile(&store)?;
        Ok(Self {
            store: std::sync::Arc::new(store),
            sealer: Sealer::new(turns),
            registry: strataflow_operators::profile::Registry::builtin(),
            gateways: models::Gateways::default(),
            batch_lock: std::sync::Mutex::new(()),
            replica: false,
            view_segment_records: views::SEGMENT_RECORDS,
        })
    }

    /// Makes this memory a replica of a shared log (a cluster node's data
    /// directory, which holds only what its consumer stores from the
    /// stream): searches and expansions of events and graph nodes then
    /// answer without recording a retrieval batch (their `batch` is
    /// `None`), so the directory stays equal to a rebuild from the stream.
    /// Writes of anything else (assessments, uses, governance, block
    /// expansions) are the caller's to refuse.
    pub fn set_replica(&mut self, replica: bool) {
        self.replica = replica;
    }

    /// How many records a segment of a persisted view (event status,
    /// weights, graph membership, block levels) applies before it is
    /// sealed and the next one started (default 65,536, at least 1). A
    /// refresh holds one open segment per view and rewrites only that one,
    /// so this bounds its memory and what a small refresh writes; loading a
    /// whole view reads every segment. Tests cut segments small to check
    /// that any cut folds to the same state.
    pub fn set_view_segment_records(&mut self, records: u64) {
        self.view_segment_records = records.max(1);
    }

    /// Whether [`Memory::set_replica`] made this memory a replica.
    pub fn is_replica(&self) -> bool {
        self.replica
    }

    /// The log, for reading its records directly.
    // reason: the integration tests, examples and benches inspect raw
    // records (derivations, model calls) that no verb lists; not a stable
    // API, so hidden from the docs.
    #[doc(hidden)]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The data directory.
    pub fn path(&self) -> PathBuf {
        self.store.path().to_path_buf()
    }

    /// Turns per block.
    pub fn block_turns(&self) -> u32 {
        self.sealer.turns_per_block()
    }

    /// Default ingest options for this directory: its sealer, fsync per
    /// batch, one worker per core, and the default profile's operators
    /// deriving every block as it seals.
    pub fn ingest_options(&self) -> Result<IngestOptions, MemoryError> {
        let (_, ops) = self.operators(None)?;
        Ok(IngestOptions {
            sealer: self.sealer,
            operators: Some(ops),
            ..IngestOptions::default()
        })
    }

    /// Starts a streaming ingester on this directory (its sealer, the
    /// default profile's operators, fsync per group) with a queue of
    /// `queue` messages. Call from within a tokio runtime or not: the handle
    /// only needs one to be awaited.
    pub fn ingester(
        &self,
        queue: usize,
    ) -> Result<strataflow_pipeline::stream::Ingester, MemoryError> {
        let (_, ops) = self.operators(None)?;
        self.ingester_with(strataflow_pipeline::stream::StreamOptions {
            queue,
            durability: strataflow_log::Durability::Sync,
            sealer: self.sealer,
            operators: Some(ops),
        })
    }

    /// [`Memory::ingester`] with every option given.
    pub fn ingester_with(
        &self,
        options: strataflow_pipeline::stream::StreamOptions,
    ) -> Result<strataflow_pipeline::stream::Ingester, MemoryError> {
        strataflow_pipeline::stream::Ingester::start(std::sync::Arc::clone(&self.store), options)
            .map_err(|e| MemoryError::Stream(Box::new(e)))
    }

    /// Ingests a JSONL message file (`docs/format.md`).
    pub fn ingest_jsonl(
        &self,
        path: &Path,
        options: &IngestOptions,
        on_invalid: OnInvalid<'_>,
        progress: &mut dyn FnMut(&IngestStats),
    ) -> Result<IngestStats, MemoryError> {
        let source = JsonlFile(path.to_path_buf());
        self.ingest_following_views(options, |options| {
            ingest::ingest(&self.store, &source, options, on_invalid, progress)
                .map_err(MemoryError::from)
        })
    }

    /// Runs an ingest (`run`, given the options) with the persisted views
    /// following its commits when it derives ([`live_views`]; not when the
    /// caller gave an observer of its own, which is kept), retries the
    /// operator runs that failed, and brings every view up to the end of
    /// the log.
    fn ingest_following_views(
        &self,
        options: &IngestOptions,
        run: impl FnOnce(&IngestOptions) -> Result<IngestStats, MemoryError>,
    ) -> Result<IngestStats, MemoryError> {
        let live = match (&options.operators, &options.observer) {
            (Some(_), None) => Some(std::sync::Arc::new(live_views::LiveViews::new(self)?)),
            _ => None,
        };
        let mut options = options.clone();
        if let Some(live) = &live {
            let observer: std::sync::Arc<dyn strataflow_pipeline::commit_observer::CommitObserver> =
                live.clone();
            options.observer = Some(observer);
        }
        let result = run(&options).and_then(|stats| self.retry_failed_runs(&options, stats));
        self.save_model_counters()?;
        let stats = result?;
        if let Some(live) = live {
            let tenants = live.finish()?;
            tracing::debug!(tenants, "views followed the ingest");
        }
        self.materialize(&options)?;
        Ok(stats)
    }

    /// Imports a LoCoMo file (either layout) into `tenant`.
    pub(crate) fn import_locomo(
        &self,
        path: &Path,
        tenant: &str,
        options: &IngestOptions,
        on_invalid: OnInvalid<'_>,
        progress: &mut dyn FnMut(&IngestStats),
    ) -> Result<IngestStats, MemoryError> {
        let items: Vec<SourceItem> = locomo::read(path, tenant).map_err(IngestError::from)?;
        self.ingest_following_views(options, |options| {
            ingest::ingest(&self.store, &items, options, on_invalid, progress)
                .map_err(MemoryError::from)
        })
    }

    /// Ingests any [`Source`] (e.g. an export read by
    /// [`strataflow_pipeline::source::export::ExportSource`], whose
    /// counters the caller can watch during the run) like `ingest_jsonl`:
    /// the same policies, inline derivation, retries and views.
    pub fn ingest_source(
        &self,
        source: &dyn Source,
        options: &IngestOptions,
        on_invalid: OnInvalid<'_>,
        progress: &mut dyn FnMut(&IngestStats),
    ) -> Result<IngestStats, MemoryError> {
        self.ingest_following_views(options, |options| {
            ingest::ingest(&self.store, source, options, on_invalid, progress)
                .map_err(MemoryError::from)
        })
    }

    /// Blocks are derived as they seal; operator runs that failed then
    /// (a model service down, an invalid answer) are retried here with the
    /// backoff of the retry policy, up to its attempt limit. The returned
    /// stats count the runs still failed.
    fn retry_failed_runs(
        &self,
        options: &IngestOptions,
        mut stats: IngestStats,
    ) -> Result<IngestStats, MemoryError> {
        let Some(ops) = &options.operators else {
            return Ok(stats);
        };
        if stats.failed_runs == 0 {
            return Ok(stats);
        }
        let derive_options = strataflow_pipeline::derive::DeriveOptions {
            durability: options.durability,
            ..self.derive_options()
        };
        let derived =
            strataflow_pipeline::derive::derive(&self.store, ops, &derive_options, &mut |_| {})?;
        stats.failed_runs = derived.terminal;
        Ok(stats)
    }

    /// The last stage of an ingest that derived: brings every persisted view
    /// of every tenant up to the end of the log in one scan, the views in
    /// parallel (each saved with the last sequence it applied, so a crash
    /// before or during this only leaves more for the next refresh); the
    /// views that followed the run start at its last record. The
    /// search snapshots are not built here: holding every tenant's search
    /// index at once doubled the peak memory of a 200,000-message backfill
    /// and halved its rate; the first search or `views` builds them.
    fn materialize(&self, options: &IngestOptions) -> Result<(), MemoryError> {
        self.store.trim_writer_cache();
        if options.operators.is_none() {
            return Ok(());
        }
        let started = std::time::Instant::now();
        self.refresh_tenants_views(None, &self.tenants()?)?;
        tracing::info!(
            elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "views materialized"
        );
        Ok(())
    }

    /// Every thread of every tenant with its head: `(tenant, thread,
    /// head)` in tenant and thread order.
    pub fn threads(&self) -> Result<Vec<(String, String, ThreadHead)>, MemoryError> {
        Ok(self.store.thread_heads()?)
    }

    /// Imports a Parquet export (`export parquet`) into this directory and
    /// brings every tenant's views up to the end of the log. Give it an
    /// empty directory: records already present are refused by the import.
    pub fn import_parquet(
        &self,
        from: &Path,
    ) -> Result<strataflow_interchange::import::ImportReport, MemoryError> {
        let report = strataflow_interchange::import::import_parquet(&self.store, from)
            .map_err(|e| MemoryError::ImportParquet(Box::new(e)))?;
        // The export's embedder setting, unless this directory has its own.
        if let Some(spec) = &report.embedder
            && self.store.config(keyed::EMBEDDER_CONFIG)?.is_none()
        {
            self.store.set_config(keyed::EMBEDDER_CONFIG, spec)?;
        }
        self.refresh_tenants_views(None, &self.tenants()?)?;
        Ok(report)
    }

    /// The last sequence number of the log (0 when it is empty): every
    /// read made after this call reflects at least this record.
    pub fn last_seq(&self) -> Result<u64, MemoryError> {
        Ok(self.store.last_seq()?.unwrap_or(0))
    }

    /// What the directory holds.
    pub fn stats(&self) -> Result<Stats, MemoryError> {
        let mut records = std::collections::BTreeMap::new();
        let mut total = 0;
        for kind in RecordKind::ALL {
            let n = self.store.count(kind)?;
            total += n;
            records.insert(kind.name(), n);
        }
        let heads = self.store.thread_heads()?;
        let mut tenants: Vec<&str> = heads.iter().map(|(t, _, _)| t.as_str()).collect();
        tenants.dedup();
        let sum = |f: fn(&ThreadHead) -> u64| heads.iter().map(|(_, _, h)| f(h)).sum::<u64>();
        Ok(Stats {
            total_records: total,
            last_seq: self.store.last_seq()?.unwrap_or(0),
            tenants: tenants.len() as u64,
            threads: heads.len() as u64,
            messages: self.store.count(RecordKind::Message)?,
            blocks: self.store.count(RecordKind::Block)?,
            open_tail_messages: sum(ThreadHead::open_tail),
            bytes_on_disk: self.store.disk_space()?,
            block_turns: self.block_turns(),
            records,
        })
    }

    /// The blocks and open tail of a thread.
    pub(crate) fn blocks(&self, tenant: &str, thread: &str) -> Result<ThreadBlocks, MemoryError> {
        let unknown = || QueryError::UnknownThread {
            tenant: tenant.to_owned(),
            thread: thread.to_owned(),
        };
        let head = self
            .store
            .thread_head(tenant, thread)?
            .ok_or_else(unknown)?;
        let mut external = std::collections::HashMap::new();
        let mut messages = Vec::new();
        let mut blocks = Vec::new();
        for entry in self.store.thread_records(tenant, thread, 0) {
            let (_, kind, id) = entry?;
            let stored = self
                .store
                .get(&id)?
                .ok_or(MemoryError::MissingRecord { id, of: None })?;
            match (kind, stored.record) {
                (RecordKind::Message, Record::Message(m)) => {
                    external.insert(id, m.external_id.clone());
                    messages.push((m.position, m.external_id));
                }
                (RecordKind::Block, Record::Block(b)) => blocks.push((id, b)),
                _ => {}
            }
        }
        messages.sort_by_key(|(position, _)| *position);
        let blocks = blocks
            .into_iter()
            .map(|(id, b)| BlockInfo {
                id,
                ordinal: b.ordinal,
                start_turn: b.start_turn,
                end_turn: b.end_turn,
                messages: b
                    .messages
                    .iter()
                    .map(|m| external.get(m).cloned().unwrap_or_else(|| m.to_hex()))
                    .collect(),
                l4_chars: b.l4.chars().count(),
                l4_tokens: estimate_tokens(&b.l4),
                l3_chars: b.l3.chars().count(),
                l3_tokens: estimate_tokens(&b.l3),
            })
            .collect();
        let open_tail = messages
            .into_iter()
            .filter(|(position, _)| *position >= head.sealed_messages)
            .map(|(_, external_id)| external_id)
            .collect();
        Ok(ThreadBlocks {
            tenant: tenant.to_owned(),
            thread: thread.to_owned(),
            blocks,
            open_tail,
        })
    }

    /// A record of `tenant` by full id or unique hex prefix (4 to 64
    /// digits, optionally after `event:`, `msg:`, `block:` or `node:`).
    ///
    /// This is the one place where an id given by a caller becomes a
    /// record: every command that takes an id resolves it here. A record
    /// of another tenant is [`QueryError::NotFound`] exactly as a missing
    /// one (nothing tells that it exists elsewhere), a prefix is matched
    /// against the tenant's records only, and ambiguity is judged among
    /// them. (Model calls belong to no tenant: they are the default
    /// tenant's, `""`.)
    pub(crate) fn show(&self, tenant: &str, id: &str) -> Result<StoredRecord, MemoryError> {
        let id = parse_id(id)?;
        let of_tenant = |rid: &RecordId| -> Result<Option<StoredRecord>, MemoryError> {
            Ok(self
                .store
                .get(rid)?
                .filter(|stored| stored.record.tenant() == tenant))
        };
        // A 4-digit prefix matches one record in 65 536: few enough to read
        // them all and keep the tenant's (a full id matches at most one).
        let mut found: Vec<StoredRecord> = Vec::new();
        let mut matches: Vec<RecordId> = Vec::new();
        for rid in self.store.ids_with_prefix(&id, usize::MAX)? {
            if let Some(stored) = of_tenant(&rid)? {
                matches.push(rid);
                found.push(stored);
                if matches.len() >= 5 {
                    break;
                }
            }
        }
        match found.len() {
            0 => Err(QueryError::NotFound { id }.into()),
            1 => found.pop().ok_or(QueryError::NotFound { id }.into()),
            _ => Err(QueryError::Ambiguous {
                prefix: id,
                matches,
            }
            .into()),
        }
    }

    /// Appends one record (fsync) and returns its id.
    fn append_one(&self, record: Record) -> Result<RecordId, MemoryError> {
        let receipt = self
            .store
            .append(&[record], strataflow_log::Durability::Sync)?;
        #[expect(
            clippy::expect_used,
            reason = "an append of one record that succeeded returns one receipt"
        )]
        let first = receipt.records.first().expect("one receipt per record");
        Ok(first.id)
    }

    /// Checks every record's hash, parents and sequence.
    pub fn audit(&self) -> Result<AuditReport, MemoryError> {
        Ok(self.store.audit()?)
    }

    /// [`Memory::audit`] after reading every entry of every keyspace (open
    /// the directory with [`Memory::open_existing_with`] and
    /// [`TableCheck::All`] to verify every table file's checksum first).
    pub fn audit_deep(&self) -> Result<AuditReport, MemoryError> {
        Ok(self.store.audit_deep()?)
    }
}

/// The longest part of a refused id an error message quotes.
const SHOWN_ID_CHARS: usize = 72;

/// An id argument, lower-cased and without its ref prefix, checked to be 4
/// to 64 hex digits ([`QueryError::InvalidId`] otherwise, quoting at most
/// [`SHOWN_ID_CHARS`] characters of it).
fn parse_id(given: &str) -> Result<String, QueryError> {
    let id = given.trim().to_ascii_lowercase();
    let id = ["event:", "msg:", "block:", "node:"]
        .iter()
        .find_map(|p| id.strip_prefix(p))
        .unwrap_or(&id)
        .to_owned();
    let problem = if !id.chars().all(|c| c.is_ascii_hexdigit()) {
        Some("not hex digits")
    } else if id.len() < 4 {
        Some("shorter than 4 digits")
    } else if id.len() > 64 {
        Some("longer than 64 digits")
    } else {
        None
    };
    match problem {
        None => Ok(id),
        Some(problem) => {
            let mut shown: String = given.trim().chars().take(SHOWN_ID_CHARS).collect();
            let chars = given.trim().chars().count();
            if chars > SHOWN_ID_CHARS {
                shown.push_str(&format!("… ({chars} characters)"));
            }
            Err(QueryError::InvalidId { shown, problem })
        }
    }
}

/// A JSONL message file as an ingest [`Source`] (read afresh for each
/// pass); what `ingest_jsonl` reads, and what `ingest --nats` publishes.
pub struct JsonlFile(pub PathBuf);

impl Source for JsonlFile {
    fn items(
        &self,
    ) -> Result<Box<dyn Iterator<Item = Result<SourceItem, SourceError>> + '_>, SourceError> {
        Ok(Box::new(JsonlReader::open(&self.0)?))
    }

    fn jsonl_chunks(&self) -> Option<Result<JsonlChunks, SourceError>> {
        Some(JsonlChunks::open(&self.0))
    }
}
