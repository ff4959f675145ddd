//! Persisted views of a [`Memory`]: refreshed incrementally from the log,
//! verified against a rebuild.

use strataflow_materializers::keyed_memory::KeyedMemoryState;
use strataflow_materializers::view::{
    BlockLevelsState, EventStatusState, GraphMembership, Materialized, Segmented, WeightsState,
};

use strataflow_log::record::Record;
use strataflow_log::{RecordId, Store, StoredRecord};

use super::search::SearchPass;
use super::{Memory, MemoryError};

/// The state of one view of one tenant.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ViewReport {
    /// View name.
    pub view: &'static str,
    /// Tenant.
    pub tenant: String,
    /// Last sequence applied.
    pub last_seq: u64,
    /// Digest of the persisted, incrementally maintained state.
    pub digest: String,
    /// Digest of a rebuild from the first record (with `verify`).
    pub rebuilt: Option<String>,
}

impl Memory {
    /// Brings a segmented view of a tenant up to the end of the log: loads
    /// its segments, applies the records after its last sequence, saves
    /// what changed (the last segment, and any sealed on the way), and
    /// returns the whole state.
    pub(crate) fn refresh<V: Segmented + Send>(
        &self,
        tenant: &str,
    ) -> Result<(V, u64), MemoryError> {
        self.refresh_keyed(V::NAME, tenant, V::default)
    }

    /// [`Memory::refresh`] for a view stored under `key` (a view that
    /// depends on a profile's operators names them in its key) and started
    /// from `fresh()`.
    pub(crate) fn refresh_keyed<V: Segmented + Send>(
        &self,
        key: &str,
        tenant: &str,
        fresh: impl Fn() -> V,
    ) -> Result<(V, u64), MemoryError> {
        let mut slot = SegmentSlot::load(
            &self.store,
            key,
            tenant,
            fresh,
            true,
            self.view_segment_records,
        )?;
        for item in self.store.scan_in_stretches(slot.from()) {
            let stored = item?;
            if stored.record.tenant() == tenant {
                slot.apply(&self.store, (&stored).into())?;
            } else {
                slot.skip(stored.seq);
            }
        }
        slot.save(&self.store)?;
        let last = slot.last;
        // default: loaded with `whole`, so the whole state is there.
        Ok((slot.whole.unwrap_or_default(), last))
    }

    /// Brings a view kept as one state (the keyed memories: a later record
    /// replaces an earlier one's entry, so the state does not split into
    /// segments) up to the end of the log, saves it, and returns it.
    pub(crate) fn refresh_whole<V: Materialized + Send>(
        &self,
        tenant: &str,
    ) -> Result<(V, u64), MemoryError> {
        let mut slot = Slot::load(self, V::NAME, tenant, V::default)?;
        for item in self.store.scan(slot.from()) {
            let stored = item?;
            if stored.record.tenant() == tenant {
                AnySlot::apply(&mut slot, &self.store, (&stored).into())?;
            } else {
                slot.skip(stored.seq);
            }
        }
        if let Some(bytes) = slot.encode_changed(tenant)? {
            self.store
                .save_view_chunks(&slot.key, tenant, slot.last, &bytes)?;
        }
        Ok((slot.state, slot.last))
    }

    /// Brings every persisted view of a tenant up to the end of the log
    /// (the last stage of an ingest), reading the log once for all of them.
    pub(crate) fn refresh_views(&self, tenant: &str) -> Result<(), MemoryError> {
        self.refresh_tenants_views(None, &[tenant.to_owned()])
    }

    /// Brings the persisted views (event status, weights, and the
    /// profile's graph membership and block levels) of every tenant of
    /// `tenants` up to the end of the log in one scan: from the lowest
    /// sequence any of them needs, each record goes to the views of its
    /// tenant only.
    pub(crate) fn refresh_tenants_views(
        &self,
        profile: Option<&str>,
        tenants: &[String],
    ) -> Result<(), MemoryError> {
        self.one_pass(profile, tenants, Pass::QUIET).map(|_| ())
    }

    /// Feeds the records from `from` to the end of the log to the views
    /// of `views` (routed by tenant through `route`): with
    /// [`Workers::Parallel`], each kind of view (event status, weights,
    /// graph membership, block levels, search) of every tenant on a thread
    /// of its own, handed the same batches of records in log order, so each
    /// view applies exactly the records, in exactly the order, it would
    /// one after the other (same states, same digests). Returns the
    /// records read and the last sequence.
    fn feed(
        &self,
        from: u64,
        route: &std::collections::HashMap<&str, usize>,
        views: &mut [TenantPass],
        workers: Workers,
    ) -> Result<(u64, u64), MemoryError> {
        // One column per kind of view: every tenant's view of that kind.
        let mut columns: Vec<Vec<Option<Unit<'_>>>> = Vec::new();
        for (t, v) in views.iter_mut().enumerate() {
            let units = v
                .slots
                .iter_mut()
                .map(|s| Unit::Slot(s.as_mut()))
                .chain(v.search.as_mut().map(Unit::Search));
            for (c, unit) in units.enumerate() {
                if columns.len() <= c {
                    columns.push(Vec::new());
                }
                if let Some(column) = columns.get_mut(c) {
                    column.resize_with(t + 1, || None);
                    if let Some(cell) = column.get_mut(t) {
                        *cell = Some(unit);
                    }
                }
            }
        }
        let (mut scanned, mut last) = (0u64, 0u64);
        if matches!(workers, Workers::Sequential) {
            for item in self.store.scan_in_stretches(from) {
                let stored = item?;
                scanned += 1;
                last = stored.seq;
                for column in &mut columns {
                    feed_column(self, column, route, std::slice::from_ref(&stored))?;
                }
            }
            return Ok((scanned, last));
        }
        std::thread::scope(|scope| {
            let mut senders = Vec::with_capacity(columns.len());
            let mut handles = Vec::with_capacity(columns.len());
            for column in &mut columns {
                let (tx, rx) =
                    std::sync::mpsc::sync_channel::<std::sync::Arc<Vec<StoredRecord>>>(2);
                senders.push(tx);
                handles.push(scope.spawn(move || {
                    for batch in rx {
                        // A failed column stops reading: its receiver goes,
                        // and the scan's sends to it are dropped.
                        feed_column(self, column, route, &batch)?;
                    }
                    Ok::<_, MemoryError>(())
                }));
            }
            let mut batch = Vec::with_capacity(FEED_BATCH);
            let send = |batch: Vec<StoredRecord>| {
                let batch = std::sync::Arc::new(batch);
                for tx in &senders {
                    // A worker only stops when its sender is dropped or it
                    // failed (its error is returned below).
                    let _ = tx.send(std::sync::Arc::clone(&batch));
                }
            };
            let mut scanning = Ok(());
            for item in self.store.scan_in_stretches(from) {
                let stored = match item {
                    Ok(stored) => stored,
                    Err(e) => {
                        scanning = Err(MemoryError::from(e));
                        break;
                    }
                };
                scanned += 1;
                last = stored.seq;
                batch.push(stored);
                if batch.len() == FEED_BATCH {
                    send(std::mem::replace(
                        &mut batch,
                        Vec::with_capacity(FEED_BATCH),
                    ));
                }
            }
            if !batch.is_empty() && scanning.is_ok() {
                send(batch);
            }
            drop(senders);
            for handle in handles {
                match handle.join() {
                    Ok(result) => result?,
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            scanning
        })?;
        Ok((scanned, last))
    }

    /// Refreshes every persisted view of each tenant of `tenants` and
    /// reports their digests, tenant after tenant in the order given, with
    /// one scan of the log for all of them (and, with
    /// [`ViewsOptions::verify`](super::ViewsOptions::verify), one more for all the rebuilds). The graph
    /// membership, block levels and search views are those of
    /// [`ViewsOptions::profile`](super::ViewsOptions::profile). One tenant's:
    /// [`TenantMemory::views`](super::TenantMemory::views).
    pub fn views(
        &self,
        tenants: &[String],
        options: &super::ViewsOptions,
    ) -> Result<Vec<ViewReport>, MemoryError> {
        self.tenants_views(options.profile.as_deref(), tenants, options.verify)
    }

    /// The views of several tenants under a profile, tenant after tenant
    /// in the order given, with one scan of the log for all of them (and,
    /// with `verify`, one more for all the rebuilds).
    pub(crate) fn tenants_views(
        &self,
        profile: Option<&str>,
        tenants: &[String],
        verify: bool,
    ) -> Result<Vec<ViewReport>, MemoryError> {
        let refreshed = self.one_pass(profile, tenants, Pass::REPORT)?;
        let rebuilt = if verify {
            Some(self.one_pass(profile, tenants, Pass::Rebuild)?)
        } else {
            None
        };
        let mut reports = Vec::with_capacity(tenants.len() * 5);
        for (i, (tenant, views)) in tenants.iter().zip(refreshed).enumerate() {
            let rebuilt = rebuilt.as_ref().and_then(|r| r.get(i));
            // The order of the report: graph membership, block levels,
            // event status, weights, search.
            for (view, slot) in [
                (GraphMembership::NAME, GRAPH),
                (BlockLevelsState::NAME, LEVELS),
                (EventStatusState::NAME, STATUS),
                (WeightsState::NAME, WEIGHTS),
                (super::search::SEARCH_VIEW, SEARCH),
            ] {
                // default: Every slot is filled by `one_pass`; an empty one reports sequence 0 and no digest.
                let (last_seq, digest) = views.get(slot).cloned().unwrap_or_default();
                reports.push(ViewReport {
                    view,
                    tenant: tenant.clone(),
                    last_seq,
                    digest,
                    rebuilt: rebuilt.and_then(|r| r.get(slot)).map(|(_, d)| d.clone()),
                });
            }
            // Keyed memories: reported for a tenant that holds any.
            if let Some(report) = self.keyed_memory_report(tenant, verify)? {
                reports.push(report);
            }
            // The dense view: reported when the profile names an embedder.
            if let Some(report) = self.dense_view_report(profile, tenant, verify)? {
                reports.push(report);
            }
        }
        Ok(reports)
    }

    /// One scan of the log feeding the views of every tenant of `tenants`
    /// (see [`Pass`]); per tenant, the last sequence and digest of each
    /// view, in the order [`STATUS`], [`WEIGHTS`], [`GRAPH`], [`LEVELS`]
    /// then, when the pass includes it, [`SEARCH`] (empty digests when the
    /// pass does not report, see [`Pass::reports`]).
    fn one_pass(
        &self,
        profile: Option<&str>,
        tenants: &[String],
        pass: Pass,
    ) -> Result<Vec<Vec<(u64, String)>>, MemoryError> {
        // One core: the views one after the other, no threads.
        let workers = if std::thread::available_parallelism().map_or(1, usize::from) > 1 {
            Workers::Parallel
        } else {
            Workers::Sequential
        };
        self.one_pass_with(profile, tenants, pass, workers, self.view_segment_records)
    }

    /// [`Memory::one_pass`] with the views fed in parallel or, for the
    /// tests that compare the two, one after the other in this thread, and
    /// segments sealed every `segment_records` records (tests cut them
    /// small).
    fn one_pass_with(
        &self,
        profile: Option<&str>,
        tenants: &[String],
        pass: Pass,
        workers: Workers,
        segment_records: u64,
    ) -> Result<Vec<Vec<(u64, String)>>, MemoryError> {
        let (graph_key, graph_fresh) = self.graph_membership_key(profile)?;
        let (levels_key, levels_fresh) = self.block_levels_key(profile)?;
        let rebuild = matches!(pass, Pass::Rebuild);
        let mut views: Vec<TenantPass> = Vec::with_capacity(tenants.len());
        // Only a lookup: the order of the work is `tenants`' and the log's.
        let mut route: std::collections::HashMap<&str, usize> =
            std::collections::HashMap::with_capacity(tenants.len());
        for tenant in tenants {
            if route.contains_key(tenant.as_str()) {
                views.push(TenantPass::default());
                continue;
            }
            route.insert(tenant, views.len());
            let slots: Vec<Box<dyn AnySlot>> = if rebuild {
                vec![
                    Box::new(Slot::fresh(
                        EventStatusState::NAME,
                        EventStatusState::default(),
                    )),
                    Box::new(Slot::fresh(WeightsState::NAME, WeightsState::default())),
                    Box::new(Slot::fresh(&graph_key, graph_fresh())),
                    Box::new(Slot::fresh(&levels_key, levels_fresh())),
                ]
            } else {
                let reports = pass.reports();
                vec![
                    Box::new(SegmentSlot::load(
                        &self.store,
                        EventStatusState::NAME,
                        tenant,
                        EventStatusState::default,
                        reports,
                        segment_records,
                    )?),
                    Box::new(SegmentSlot::load(
                        &self.store,
                        WeightsState::NAME,
                        tenant,
                        WeightsState::default,
                        reports,
                        segment_records,
                    )?),
                    Box::new(SegmentSlot::load(
                        &self.store,
                        &graph_key,
                        tenant,
                        &graph_fresh,
                        reports,
                        segment_records,
                    )?),
                    Box::new(SegmentSlot::load(
                        &self.store,
                        &levels_key,
                        tenant,
                        &levels_fresh,
                        reports,
                        segment_records,
                    )?),
                ]
            };
            let search = match pass {
                Pass::Refresh { search: false, .. } => None,
                Pass::Refresh { search: true, .. } => Some(self.search_pass(profile, tenant)?),
                Pass::Rebuild => Some(self.rebuild_search_pass(profile, tenant)?),
            };
            views.push(TenantPass { slots, search });
        }
        let from = views
            .iter()
            .flat_map(|v| {
                v.slots
                    .iter()
                    .map(|s| s.from())
                    .chain(v.search.iter().map(SearchPass::from))
            })
            .min();
        let mut scanned = 0u64;
        if let Some(from) = from {
            let last;
            (scanned, last) = self.feed(from, &route, &mut views, workers)?;
            // Every other tenant's record up to `last` was seen.
            for v in &mut views {
                for slot in &mut v.slots {
                    slot.skip(last);
                }
                if let Some(search) = &mut v.search {
                    search.skip_to(last);
                }
            }
        }
        tracing::info!(
            tenants = tenants.len(),
            // default: Nothing to scan: logged as sequence 0.
            from = from.unwrap_or_default(),
            records_scanned = scanned,
            rebuild,
            "views caught up in one scan"
        );
        // Each view is saved (a refresh) and its digest taken (when the pass
        // reports), then its state is dropped before the next one: a state
        // is dropped before its encoding is written, and a refresh that
        // reports nothing computes no digest (the weights and status folds
        // a digest needs are as large as the states).
        let reports = pass.reports();
        let mut out = Vec::with_capacity(views.len());
        let mut searches = Vec::with_capacity(views.len());
        for (tenant, v) in tenants.iter().zip(views) {
            let mut digests: Vec<(u64, String)> = Vec::with_capacity(v.slots.len() + 1);
            for slot in v.slots {
                digests.push(slot.finish(&self.store, tenant, !rebuild, reports)?);
            }
            out.push(digests);
            searches.push(v.search);
        }
        // The searchers last: finishing one reads the views saved above
        // (a refresh with nothing to scan).
        for (digests, search) in out.iter_mut().zip(searches) {
            if let Some(search) = search {
                let searcher = self.finish_search_pass(search)?;
                let digest = if reports {
                    searcher.digest()
                } else {
                    String::new()
                };
                digests.push((searcher.last_seq(), digest));
            }
        }
        // A tenant given twice reports what its first mention did.
        for (i, tenant) in tenants.iter().enumerate() {
            if let Some(&first) = route.get(tenant.as_str())
                && first != i
            {
                // default: `first` indexes a tenant already pushed to `out`.
                let copy = out.get(first).cloned().unwrap_or_default();
                if let Some(slot) = out.get_mut(i) {
                    *slot = copy;
                }
            }
        }
        Ok(out)
    }

    /// The keyed-memory view's report of a tenant (refreshed, and with
    /// `verify` rebuilt from the first record), or `None` when the tenant
    /// holds no keyed memory.
    fn keyed_memory_report(
        &self,
        tenant: &str,
        verify: bool,
    ) -> Result<Option<ViewReport>, MemoryError> {
        use strataflow_log::record::RecordKind;
        if self.store.count(RecordKind::KeyedMemory)? == 0 {
            return Ok(None);
        }
        let (state, last_seq) = self.refresh_whole::<KeyedMemoryState>(tenant)?;
        if state.applied == 0 {
            return Ok(None);
        }
        let rebuilt = if verify {
            let mut fresh = KeyedMemoryState::default();
            for item in self.store.scan(0) {
                let stored = item?;
                if stored.record.tenant() == tenant {
                    fresh.apply(&stored.id, &stored.record);
                }
            }
            Some(fresh.digest())
        } else {
            None
        };
        Ok(Some(ViewReport {
            view: KeyedMemoryState::NAME,
            tenant: tenant.to_owned(),
            last_seq,
            digest: state.digest(),
            rebuilt,
        }))
    }

    /// The key and empty state of a profile's graph membership view.
    pub(crate) fn graph_membership_key(
        &self,
        profile: Option<&str>,
    ) -> Result<(String, impl Fn() -> GraphMembership + use<>), MemoryError> {
        let (_, ops) = self.operators(profile)?;
        let (id, config) = (ops.projector.id().to_string(), ops.projector.config_hash());
        let key = format!("{}/{id}/{}", GraphMembership::NAME, config.short());
        Ok((key, move || GraphMembership::new(id.clone(), config)))
    }

    /// The key and empty state of a profile's block levels view.
    pub(crate) fn block_levels_key(
        &self,
        profile: Option<&str>,
    ) -> Result<(String, impl Fn() -> BlockLevelsState + use<>), MemoryError> {
        let (_, ops) = self.operators(profile)?;
        let (id, config) = (ops.extractor.id().to_string(), ops.extractor.config_hash());
        let key = format!("{}/{id}/{}", BlockLevelsState::NAME, config.short());
        Ok((key, move || BlockLevelsState::new(id.clone(), config)))
    }

    /// Tenants that hold records (from the thread heads), then those that
    /// hold only keyed memories.
    pub fn tenants(&self) -> Result<Vec<String>, MemoryError> {
        let mut tenants: Vec<String> = self
            .store
            .thread_heads()?
            .into_iter()
            .map(|(t, _, _)| t)
            .collect();
        tenants.dedup();
        for t in self.keyed_memory_tenants()? {
            if !tenants.contains(&t) {
                tenants.push(t);
            }
        }
        Ok(tenants)
    }
}

/// One view being refreshed: its state, where it was loaded from, and
/// whether it changed.
struct Slot<V> {
    key: String,
    state: V,
    /// Last sequence applied (or skipped as another tenant's).
    last: u64,
    /// The sequence the persisted state was saved at (0: none).
    saved: u64,
    /// The state was rebuilt from the first record or applied something.
    changed: bool,
}

impl<V: Materialized> Slot<V> {
    /// A state folded from the first record (a rebuild, never saved).
    fn fresh(key: &str, state: V) -> Self {
        Self {
            key: key.to_owned(),
            state,
            last: 0,
            saved: 0,
            changed: false,
        }
    }

    /// Loads the persisted state, or a fresh one when there is none or it
    /// cannot be read (an older build's state is rebuilt, never trusted).
    fn load(
        memory: &Memory,
        key: &str,
        tenant: &str,
        fresh: impl Fn() -> V,
    ) -> Result<Self, MemoryError> {
        let loaded = match memory.store.view_chunks(key, tenant) {
            Ok(Some((seq, bytes))) => V::decode(&bytes).map(|state| (seq, state)),
            Ok(None) | Err(strataflow_log::StoreError::Corrupt { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        Ok(match loaded {
            Some((last, state)) => Self {
                key: key.to_owned(),
                state,
                last,
                saved: last,
                changed: false,
            },
            None => Self {
                key: key.to_owned(),
                state: fresh(),
                last: 0,
                saved: 0,
                changed: true,
            },
        })
    }

    /// The state's encoding when it must be saved: it changed, or only
    /// went past other tenants' records (so that the next refresh does not
    /// read them again).
    fn encode_changed(&self, tenant: &str) -> Result<Option<Vec<u8>>, MemoryError> {
        if !self.changed && self.last <= self.saved {
            return Ok(None);
        }
        self.state
            .encode()
            .map(Some)
            .map_err(|detail| MemoryError::ViewEncode {
                view: self.key.clone(),
                tenant: tenant.to_owned(),
                detail,
            })
    }
}

/// What a [`Memory::one_pass`] does.
#[derive(Clone, Copy)]
enum Pass {
    /// Brings the persisted views up to the end of the log and saves them;
    /// with `search`, the search snapshot too; with `report`, takes every
    /// view's digest.
    Refresh { search: bool, report: bool },
    /// Folds every view, the search indexes included, from the first
    /// record, without reading or saving anything persisted.
    Rebuild,
}

impl Pass {
    /// The refresh that ends an ingest or an import: views saved, no
    /// digest.
    const QUIET: Self = Self::Refresh {
        search: false,
        report: false,
    };
    /// The refresh of `views`: every view, search included, with digests.
    const REPORT: Self = Self::Refresh {
        search: true,
        report: true,
    };

    /// Whether the pass reports digests (a refresh that only brings the
    /// views up to date reports nothing).
    fn reports(self) -> bool {
        match self {
            Self::Refresh { report, .. } => report,
            Self::Rebuild => true,
        }
    }
}

/// How [`Memory::feed`] runs the views.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Workers {
    /// Each kind of view on a thread of its own.
    Parallel,
    /// One after the other in the calling thread.
    Sequential,
}

/// Records per batch handed to the view threads of [`Memory::feed`].
const FEED_BATCH: usize = 1024;

/// One view of one tenant in [`Memory::feed`].
enum Unit<'a> {
    Slot(&'a mut dyn AnySlot),
    Search(&'a mut SearchPass),
}

/// Gives each record of `batch` to the view of its tenant in `column`
/// (a view skips what it already applied).
fn feed_column(
    memory: &Memory,
    column: &mut [Option<Unit<'_>>],
    route: &std::collections::HashMap<&str, usize>,
    batch: &[StoredRecord],
) -> Result<(), MemoryError> {
    for stored in batch {
        let Some(unit) = route
            .get(stored.record.tenant())
            .and_then(|&i| column.get_mut(i))
            .and_then(Option::as_mut)
        else {
            continue;
        };
        match unit {
            Unit::Slot(slot) => {
                if stored.seq >= slot.from() {
                    slot.apply(&memory.store, stored.into())?;
                }
            }
            Unit::Search(search) => {
                if stored.seq >= search.from() {
                    search.take(stored.clone());
                }
            }
        }
    }
    Ok(())
}

/// Index of each view in a tenant's result of [`Memory::one_pass`].
const STATUS: usize = 0;
const WEIGHTS: usize = 1;
const GRAPH: usize = 2;
const LEVELS: usize = 3;
const SEARCH: usize = 4;

/// The views of one tenant in a [`Memory::one_pass`].
#[derive(Default)]
struct TenantPass {
    slots: Vec<Box<dyn AnySlot>>,
    search: Option<SearchPass>,
}

/// A record of the log as a view applies it, borrowed: from a scan
/// ([`StoredRecord`]) or from an ingest's committed batch.
#[derive(Clone, Copy)]
pub(super) struct Logged<'a> {
    pub(super) seq: u64,
    pub(super) id: &'a RecordId,
    pub(super) record: &'a Record,
}

impl<'a> From<&'a StoredRecord> for Logged<'a> {
    fn from(stored: &'a StoredRecord) -> Self {
        Self {
            seq: stored.seq,
            id: &stored.id,
            record: &stored.record,
        }
    }
}

/// A slot of any view type ([`Slot`] or [`SegmentSlot`]), so that one
/// scan can feed several (on threads of their own).
pub(super) trait AnySlot: Send {
    fn from(&self) -> u64;
    /// Applies the next record of the slot's tenant (a segment may read
    /// earlier records it does not hold from the log).
    fn apply(&mut self, store: &Store, logged: Logged<'_>) -> Result<(), MemoryError>;
    fn skip(&mut self, seq: u64);
    /// Saves the state (with `save`) and takes its digest (with `digest`,
    /// else an empty one), consuming the slot: the state is dropped before
    /// its encoding is written.
    fn finish(
        self: Box<Self>,
        store: &Store,
        tenant: &str,
        save: bool,
        digest: bool,
    ) -> Result<(u64, String), MemoryError>;
}

impl<V: Materialized + Send> AnySlot for Slot<V> {
    fn from(&self) -> u64 {
        self.last + 1
    }

    fn apply(&mut self, _store: &Store, logged: Logged<'_>) -> Result<(), MemoryError> {
        self.state.apply(logged.id, logged.record);
        self.last = logged.seq;
        self.changed = true;
        Ok(())
    }

    fn skip(&mut self, seq: u64) {
        self.last = self.last.max(seq);
    }

    fn finish(
        self: Box<Self>,
        store: &Store,
        tenant: &str,
        save: bool,
        digest: bool,
    ) -> Result<(u64, String), MemoryError> {
        let digest = if digest {
            self.state.digest()
        } else {
            String::new()
        };
        if save && let Some(bytes) = self.encode_changed(tenant)? {
            let Slot {
                key, last, state, ..
            } = *self;
            drop(state);
            store.save_view_chunks(&key, tenant, last, &bytes)?;
            tracing::info!(view = key, tenant, bytes = bytes.len(), "view saved");
            return Ok((last, digest));
        }
        Ok((self.last, digest))
    }
}

/// Records a segment of a persisted view applies before it is sealed and
/// the next one started: what bounds a refresh's memory (one open segment
/// per view, whatever the size of the log) and the bytes a small refresh
/// rewrites (the open segment, not the whole state).
pub(crate) const SEGMENT_RECORDS: u64 = 65_536;

/// One segmented view being refreshed: its open (last) segment, which the
/// next records extend, and, when the caller needs it, the whole state.
pub(super) struct SegmentSlot<V> {
    key: String,
    tenant: String,
    /// The open segment.
    open: V,
    /// Its index among the view's segments.
    index: u32,
    /// Records the open segment applied.
    open_records: u64,
    /// Records after which a segment is sealed.
    segment_records: u64,
    /// Every segment appended in order, plus what the open one applied
    /// since: kept only when the caller wants the state or its digest.
    whole: Option<V>,
    /// Last sequence applied (or skipped as another tenant's).
    last: u64,
    /// The sequence the view's head was saved at.
    saved: u64,
    /// The open segment applied something since it was loaded or saved,
    /// or the view is being rebuilt from the first record.
    changed: bool,
}

impl<V: Segmented> SegmentSlot<V> {
    /// Loads the view's open segment (or starts the one after a full last
    /// segment) and, with `whole`, every segment appended in order. A view
    /// with no head, an unreadable head or segment, or an unsegmented state
    /// of an earlier build is rebuilt from the first record, never trusted.
    pub(super) fn load(
        store: &Store,
        key: &str,
        tenant: &str,
        fresh: impl Fn() -> V,
        whole: bool,
        segment_records: u64,
    ) -> Result<Self, MemoryError> {
        let loaded = Self::read(store, key, tenant, whole)?;
        let mut slot = Self {
            key: key.to_owned(),
            tenant: tenant.to_owned(),
            open: fresh(),
            index: 0,
            open_records: 0,
            segment_records: segment_records.max(1),
            whole: whole.then(&fresh),
            last: 0,
            saved: 0,
            changed: true,
        };
        if let Some(Loaded {
            last,
            segments,
            records,
            open,
            whole,
        }) = loaded
        {
            (slot.last, slot.saved, slot.changed) = (last, last, false);
            slot.whole = whole;
            if records >= slot.segment_records {
                slot.open = open.continuation();
                slot.index = segments;
            } else {
                slot.open = open;
                slot.index = segments.saturating_sub(1);
                slot.open_records = records;
            }
        }
        Ok(slot)
    }

    /// The persisted segments, or `None` when they are missing or cannot be
    /// read (the view is then rebuilt).
    fn read(
        store: &Store,
        key: &str,
        tenant: &str,
        whole: bool,
    ) -> Result<Option<Loaded<V>>, MemoryError> {
        let (last, segments, records) = match store.view_segments(key, tenant) {
            Ok(Some(head)) if head.1 > 0 => head,
            Ok(_) | Err(strataflow_log::StoreError::Corrupt { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let segment = |index: u32| -> Result<Option<V>, MemoryError> {
            match store.view_segment(key, tenant, index) {
                Ok(Some((_, bytes))) => Ok(V::decode(&bytes)),
                Ok(None) | Err(strataflow_log::StoreError::Corrupt { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            }
        };
        let Some(open) = segment(segments - 1)? else {
            return Ok(None);
        };
        let whole = if whole {
            let mut state: Option<V> = None;
            for index in 0..segments {
                let Some(part) = segment(index)? else {
                    return Ok(None);
                };
                match &mut state {
                    Some(state) => state.append(part),
                    None => state = Some(part),
                }
            }
            state
        } else {
            None
        };
        Ok(Some(Loaded {
            last,
            segments,
            records,
            open,
            whole,
        }))
    }

    /// Writes the open segment as the view's last, with the sequence
    /// reached.
    fn write_open(&self, store: &Store) -> Result<usize, MemoryError> {
        let bytes = self
            .open
            .encode()
            .map_err(|detail| MemoryError::ViewEncode {
                view: self.key.clone(),
                tenant: self.tenant.clone(),
                detail,
            })?;
        store.save_view_segment(
            &self.key,
            &self.tenant,
            self.index,
            self.last,
            self.open_records,
            &bytes,
        )?;
        Ok(bytes.len())
    }

    /// Saves the open segment when it applied something, or when the view
    /// only went past other tenants' records (so that the next refresh
    /// does not read them again).
    fn save(&mut self, store: &Store) -> Result<(), MemoryError> {
        if self.changed || self.last > self.saved {
            let bytes = self.write_open(store)?;
            tracing::debug!(
                view = self.key,
                tenant = self.tenant,
                segment = self.index,
                bytes,
                "view segment saved"
            );
            self.saved = self.last;
            self.changed = false;
        }
        Ok(())
    }
}

/// What [`SegmentSlot::read`] found.
struct Loaded<V> {
    last: u64,
    segments: u32,
    records: u64,
    open: V,
    whole: Option<V>,
}

impl<V: Segmented + Send> AnySlot for SegmentSlot<V> {
    fn from(&self) -> u64 {
        self.last + 1
    }

    fn apply(&mut self, store: &Store, logged: Logged<'_>) -> Result<(), MemoryError> {
        let Logged { seq, id, record } = logged;
        for wanted in self.open.wants(record) {
            // What the open segment does not hold, the log does: the same
            // tenant's record, logged before this one.
            if let Some(earlier) = store.get(&wanted)?
                && earlier.seq < seq
                && earlier.record.tenant() == self.tenant
            {
                self.open.recall(&earlier.id, &earlier.record);
            }
        }
        self.open.apply(id, record);
        if let Some(whole) = &mut self.whole {
            whole.apply(id, record);
        }
        self.last = seq;
        self.changed = true;
        self.open_records += 1;
        if self.open_records >= self.segment_records {
            // Sealed: saved as it is, and the next records go to its
            // continuation, the next segment.
            self.save(store)?;
            self.open = self.open.continuation();
            self.index = self.index.saturating_add(1);
            self.open_records = 0;
        }
        Ok(())
    }

    fn skip(&mut self, seq: u64) {
        self.last = self.last.max(seq);
    }

    fn finish(
        mut self: Box<Self>,
        store: &Store,
        _tenant: &str,
        save: bool,
        digest: bool,
    ) -> Result<(u64, String), MemoryError> {
        if save {
            self.save(store)?;
        }
        let digest = match (&self.whole, digest) {
            (Some(whole), true) => whole.digest(),
            _ => String::new(),
        };
        Ok((self.last, digest))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use strataflow_log::{Record, RecordId};
    use strataflow_materializers::view::WeightEntry;

    use super::*;

    /// Digests taken by [`Counted`] views.
    static DIGESTS: AtomicUsize = AtomicUsize::new(0);

    /// A view that counts the digests taken of it.
    #[derive(Default)]
    struct Counted(u64);

    impl Materialized for Counted {
        const NAME: &'static str = "counted";

        fn apply(&mut self, _id: &RecordId, _record: &Record) {
            self.0 += 1;
        }

        fn digest(&self) -> String {
            DIGESTS.fetch_add(1, Ordering::SeqCst);
            self.0.to_string()
        }

        fn encode(&self) -> Result<Vec<u8>, String> {
            Ok(self.0.to_be_bytes().to_vec())
        }

        fn decode(bytes: &[u8]) -> Option<Self> {
            Some(Self(u64::from_be_bytes(bytes.try_into().ok()?)))
        }
    }

    /// A memory in `dir` holding LoCoMo conv-26, imported with derivation
    /// (events extracted).
    fn conv26(dir: &std::path::Path) -> Memory {
        let memory = Memory::open(dir).unwrap();
        let mut options = memory.ingest_options().unwrap();
        options.durability = strataflow_log::Durability::Buffered;
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/locomo/conv-26.json");
        let stats = memory
            .default_tenant()
            .import_locomo(
                &file,
                &options,
                strataflow_pipeline::ingest::OnInvalid::Refuse,
                &mut |_| {},
            )
            .unwrap();
        assert!(stats.events > 0, "derived: {stats:?}");
        memory
    }

    /// The views fed in parallel (each kind on a thread of its own) fold
    /// exactly what they fold one after the other: on LoCoMo conv-26
    /// ingested with derivation, the rebuilt digests of every view, search
    /// included, are equal, and so are those of a refresh from nothing;
    /// the ingest's own refresh (parallel, with the search snapshot in the
    /// same scan) left states whose digests are those of the rebuild.
    #[test]
    fn views_fed_in_parallel_equal_views_fed_one_after_the_other() {
        let dir = tempfile::tempdir().unwrap();
        let memory = conv26(dir.path());
        let tenants = memory.tenants().unwrap();
        // The ingest's refresh leaves the search snapshot to the first
        // search (building every tenant's at once doubled its memory).
        let key = memory.search_view_key(None).unwrap();
        assert!(
            memory
                .store
                .view_chunks(&key, &tenants[0])
                .unwrap()
                .is_none(),
            "the ingest's refresh saves no search snapshot"
        );
        let parallel = memory
            .one_pass_with(
                None,
                &tenants,
                Pass::Rebuild,
                Workers::Parallel,
                SEGMENT_RECORDS,
            )
            .unwrap();
        let sequential = memory
            .one_pass_with(
                None,
                &tenants,
                Pass::Rebuild,
                Workers::Sequential,
                SEGMENT_RECORDS,
            )
            .unwrap();
        assert_eq!(parallel, sequential);
        assert_eq!(parallel[0].len(), 5);
        assert!(
            parallel[0]
                .iter()
                .all(|(seq, digest)| *seq > 0 && !digest.is_empty())
        );
        // What the ingest's refresh saved is what a rebuild folds.
        let refreshed = memory.one_pass(None, &tenants, Pass::REPORT).unwrap();
        assert_eq!(refreshed, sequential);
    }

    /// A refresh that reports nothing (the end of an ingest) saves each
    /// view without taking its digest; a reporting pass takes it.
    #[test]
    fn a_refresh_that_reports_nothing_takes_no_digest() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory::open(dir.path()).unwrap();
        let slot = |seen: u64| {
            let mut slot = Slot::fresh(Counted::NAME, Counted(seen));
            slot.last = 7;
            slot.changed = true;
            Box::new(slot) as Box<dyn AnySlot>
        };
        assert!(!Pass::QUIET.reports());
        assert!(Pass::REPORT.reports());
        assert!(Pass::Rebuild.reports());
        let before = DIGESTS.load(Ordering::SeqCst);
        let quiet = slot(3).finish(&memory.store, "t", true, false).unwrap();
        assert_eq!(quiet, (7, String::new()));
        assert_eq!(DIGESTS.load(Ordering::SeqCst), before);
        // Saved all the same: a load reads what the quiet pass wrote.
        let loaded = Slot::load(&memory, Counted::NAME, "t", Counted::default).unwrap();
        assert_eq!((loaded.last, loaded.state.0), (7, 3));
        let reported = slot(3).finish(&memory.store, "t", false, true).unwrap();
        assert_eq!(reported, (7, "3".to_owned()));
        assert_eq!(DIGESTS.load(Ordering::SeqCst), before + 1);
    }

    /// The whole state of a view folded from the first record into one.
    fn folded<V: Materialized>(memory: &Memory, fresh: V) -> V {
        let mut state = fresh;
        for item in memory.store.scan(0) {
            let stored = item.unwrap();
            if stored.record.tenant().is_empty() {
                state.apply(&stored.id, &stored.record);
            }
        }
        state
    }

    /// Replaces a view's segments with an unsegmented head (as an earlier
    /// build left), so that the next refresh rebuilds it.
    fn unsegment(memory: &Memory, key: &str) {
        memory.store.save_view_chunks(key, "", 0, &[]).unwrap();
    }

    /// Segments cut anywhere fold to the whole state: on LoCoMo conv-26
    /// with derivation, expansions (a governance record naming a block
    /// logged long before) and uses of graph nodes (naming assertions
    /// logged before), each view rebuilt (after an unsegmented head, as an
    /// earlier build left) in segments of 1, 2, 7 and 300 records, then
    /// loaded whole from its segments, equals, field for field, the one
    /// fold of every record.
    #[test]
    fn segments_cut_anywhere_append_to_the_whole_fold() {
        let dir = tempfile::tempdir().unwrap();
        let mut memory = conv26(dir.path());
        let tenant = memory.default_tenant();
        let context = tenant.context(&crate::ContextOptions::default()).unwrap();
        for (i, block) in context.iter().take(3).enumerate() {
            tenant
                .expand_block(
                    &block.block.to_hex(),
                    strataflow_operators::decay::ExpandTarget::Level(u8::try_from(i).unwrap()),
                    &crate::ExpandOptions::default(),
                )
                .unwrap();
        }
        for query in ["charity race", "Caroline", "painting"] {
            let found = tenant
                .search(
                    &crate::SearchRequest {
                        query: query.into(),
                        ..crate::SearchRequest::default()
                    },
                    &crate::SearchOptions {
                        channel: crate::Channel::Graph,
                        ..Default::default()
                    },
                )
                .unwrap();
            let refs: Vec<_> = found
                .hits
                .iter()
                .take(2)
                .map(|h| h.reference.clone())
                .collect();
            if refs.is_empty() {
                continue;
            }
            let batch = found.batch.unwrap().to_hex();
            let input = strataflow_operators::evidence_gate::AssessmentInput {
                verdict: "sufficient".into(),
                evidence: refs.clone(),
                fit: String::new(),
                missing: String::new(),
                next: "answer".into(),
            };
            tenant.assess(&batch, &input).unwrap();
            tenant.use_refs(&batch, &refs).unwrap();
        }
        drop(tenant);
        let (graph_key, graph_fresh) = memory.graph_membership_key(None).unwrap();
        let (levels_key, levels_fresh) = memory.block_levels_key(None).unwrap();
        let whole_status = folded(&memory, EventStatusState::default());
        let whole_weights = folded(&memory, WeightsState::default());
        let whole_graph = folded(&memory, graph_fresh());
        let whole_levels = folded(&memory, levels_fresh());
        assert!(
            whole_weights
                .inputs
                .iter()
                .any(|e| matches!(e, WeightEntry::Use(events, _) if !events.is_empty())),
            "a use reinforced events"
        );
        assert!(
            whole_levels
                .inputs
                .values()
                .flatten()
                .any(|(_, level)| level.is_some()),
            "an expansion was applied"
        );
        for records in [1, 2, 7, 300] {
            memory.set_view_segment_records(records);
            for key in [
                EventStatusState::NAME,
                WeightsState::NAME,
                &graph_key,
                &levels_key,
            ] {
                unsegment(&memory, key);
            }
            // The ingest's pass (no whole state kept), then each view
            // loaded whole from its segments.
            memory.refresh_views("").unwrap();
            let (_, segments, _) = memory
                .store
                .view_segments(WeightsState::NAME, "")
                .unwrap()
                .unwrap();
            assert!(
                records == 300 || segments > 10,
                "{records}: {segments} segments"
            );
            assert_eq!(
                memory.refresh::<EventStatusState>("").unwrap().0,
                whole_status,
                "{records}"
            );
            assert_eq!(
                memory.refresh::<WeightsState>("").unwrap().0,
                whole_weights,
                "{records}"
            );
            assert_eq!(
                memory
                    .refresh_keyed(&graph_key, "", &graph_fresh)
                    .unwrap()
                    .0,
                whole_graph,
                "{records}"
            );
            assert_eq!(
                memory
                    .refresh_keyed(&levels_key, "", &levels_fresh)
                    .unwrap()
                    .0,
                whole_levels,
                "{records}"
            );
        }
    }
}
