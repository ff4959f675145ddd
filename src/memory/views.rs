//! Persisted views of a [`Memory`]: refreshed incrementally from the log,
//! verified against a rebuild.

use strataflow_materializers::view::{
    BlockLevelsState, EventStatusState, GraphMembership, Materialized, WeightsState,
};

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
    /// Brings a view of a tenant up to the end of the log: loads its state,
    /// applies the records after its last sequence, saves it.
    pub fn refresh<V: Materialized>(&self, tenant: &str) -> Result<(V, u64), MemoryError> {
        self.refresh_keyed(V::NAME, tenant, V::default)
    }

    /// [`Memory::refresh`] for a view stored under `key` (a view that
    /// depends on a profile's operators names them in its key) and started
    /// from `fresh()`.
    pub fn refresh_keyed<V: Materialized>(
        &self,
        key: &str,
        tenant: &str,
        fresh: impl Fn() -> V,
    ) -> Result<(V, u64), MemoryError> {
        let mut slot = Slot::load(self, key, tenant, fresh)?;
        for item in self.store.scan(slot.from()) {
            let stored = item?;
            if stored.record.tenant() == tenant {
                slot.apply(&stored);
            } else {
                slot.last = stored.seq;
            }
        }
        slot.save(self, tenant)?;
        Ok((slot.state, slot.last))
    }

    /// Folds a view of a tenant from the first record, without saving.
    pub fn rebuild<V: Materialized>(&self, tenant: &str) -> Result<V, MemoryError> {
        self.rebuild_from(tenant, V::default())
    }

    /// Folds `state` over a tenant's records from the first, without saving.
    pub fn rebuild_from<V: Materialized>(&self, tenant: &str, state: V) -> Result<V, MemoryError> {
        let mut state = state;
        for item in self.store.scan(1) {
            let stored = item?;
            if stored.record.tenant() == tenant {
                state.apply(&stored.id, &stored.record);
            }
        }
        Ok(state)
    }

    /// Brings every persisted view of a tenant up to the end of the log
    /// (the last stage of an ingest), reading the log once for all of them.
    pub fn refresh_views(&self, tenant: &str) -> Result<(), MemoryError> {
        let (graph_key, graph_fresh) = self.graph_membership_key(None)?;
        let (levels_key, levels_fresh) = self.block_levels_key(None)?;
        let mut slots: Vec<Box<dyn AnySlot>> = vec![
            Box::new(Slot::load(
                self,
                EventStatusState::NAME,
                tenant,
                EventStatusState::default,
            )?),
            Box::new(Slot::load(
                self,
                WeightsState::NAME,
                tenant,
                WeightsState::default,
            )?),
            Box::new(Slot::load(self, &graph_key, tenant, graph_fresh)?),
            Box::new(Slot::load(self, &levels_key, tenant, levels_fresh)?),
        ];
        let from = slots.iter().map(|s| s.from()).min().unwrap_or(1);
        for item in self.store.scan(from) {
            let stored = item?;
            let mine = stored.record.tenant() == tenant;
            for slot in &mut slots {
                if stored.seq >= slot.from() {
                    if mine {
                        slot.apply(&stored);
                    } else {
                        slot.skip(stored.seq);
                    }
                }
            }
        }
        for slot in &slots {
            slot.save(self, tenant)?;
        }
        Ok(())
    }

    /// Refreshes every persisted view of a tenant and reports their digests;
    /// with `verify`, also rebuilds each from the log and reports that digest.
    pub fn views(&self, tenant: &str, verify: bool) -> Result<Vec<ViewReport>, MemoryError> {
        self.profile_views(None, tenant, verify)
    }

    /// [`Memory::views`] under a profile (`None`: the default): the graph
    /// membership, block levels and search views are the profile's.
    pub fn profile_views(
        &self,
        profile: Option<&str>,
        tenant: &str,
        verify: bool,
    ) -> Result<Vec<ViewReport>, MemoryError> {
        let (status, seq) = self.refresh::<EventStatusState>(tenant)?;
        let (weights, wseq) = self.refresh::<WeightsState>(tenant)?;
        let (graph_key, graph_fresh) = self.graph_membership_key(profile)?;
        let (graph, gseq) = self.refresh_keyed(&graph_key, tenant, &graph_fresh)?;
        let (levels_key, levels_fresh) = self.block_levels_key(profile)?;
        let (levels, lseq) = self.refresh_keyed(&levels_key, tenant, &levels_fresh)?;
        // The search indexes last: refreshing them refreshes the views they
        // read (status, weights, graph membership) once more, a no-op here.
        let searcher = self.searcher(profile, tenant)?;
        Ok(vec![
            ViewReport {
                view: GraphMembership::NAME,
                tenant: tenant.to_owned(),
                last_seq: gseq,
                digest: graph.digest(),
                rebuilt: if verify {
                    Some(self.rebuild_from(tenant, graph_fresh())?.digest())
                } else {
                    None
                },
            },
            ViewReport {
                view: BlockLevelsState::NAME,
                tenant: tenant.to_owned(),
                last_seq: lseq,
                digest: levels.digest(),
                rebuilt: if verify {
                    Some(self.rebuild_from(tenant, levels_fresh())?.digest())
                } else {
                    None
                },
            },
            ViewReport {
                view: EventStatusState::NAME,
                tenant: tenant.to_owned(),
                last_seq: seq,
                digest: status.digest(),
                rebuilt: if verify {
                    Some(self.rebuild::<EventStatusState>(tenant)?.digest())
                } else {
                    None
                },
            },
            ViewReport {
                view: WeightsState::NAME,
                tenant: tenant.to_owned(),
                last_seq: wseq,
                digest: weights.digest(),
                rebuilt: if verify {
                    Some(self.rebuild::<WeightsState>(tenant)?.digest())
                } else {
                    None
                },
            },
            ViewReport {
                view: super::search::SEARCH_VIEW,
                tenant: tenant.to_owned(),
                last_seq: searcher.last_seq(),
                digest: searcher.digest(),
                rebuilt: if verify {
                    Some(self.searcher_rebuilt(profile, tenant)?.digest())
                } else {
                    None
                },
            },
        ])
    }

    /// The key and empty state of a profile's graph membership view.
    pub(crate) fn graph_membership_key(
        &self,
        profile: Option<&str>,
    ) -> Result<(String, impl Fn() -> GraphMembership), MemoryError> {
        let (_, ops) = self.operators(profile)?;
        let (id, config) = (ops.projector.id().to_string(), ops.projector.config_hash());
        let key = format!("{}/{id}/{}", GraphMembership::NAME, config.short());
        Ok((key, move || GraphMembership::new(id.clone(), config)))
    }

    /// The key and empty state of a profile's block levels view.
    pub(crate) fn block_levels_key(
        &self,
        profile: Option<&str>,
    ) -> Result<(String, impl Fn() -> BlockLevelsState), MemoryError> {
        let (_, ops) = self.operators(profile)?;
        let (id, config) = (ops.extractor.id().to_string(), ops.extractor.config_hash());
        let key = format!("{}/{id}/{}", BlockLevelsState::NAME, config.short());
        Ok((key, move || BlockLevelsState::new(id.clone(), config)))
    }

    /// Tenants that hold records (from the thread heads).
    pub fn tenants(&self) -> Result<Vec<String>, MemoryError> {
        let mut tenants: Vec<String> = self
            .store
            .thread_heads()?
            .into_iter()
            .map(|(t, _, _)| t)
            .collect();
        tenants.dedup();
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
    /// The state was rebuilt from the first record or applied something.
    changed: bool,
}

impl<V: Materialized> Slot<V> {
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
                changed: false,
            },
            None => Self {
                key: key.to_owned(),
                state: fresh(),
                last: 0,
                changed: true,
            },
        })
    }
}

/// A [`Slot`] of any view type, so that one scan can feed several.
trait AnySlot {
    fn from(&self) -> u64;
    fn apply(&mut self, stored: &strataflow_log::StoredRecord);
    fn skip(&mut self, seq: u64);
    fn save(&self, memory: &Memory, tenant: &str) -> Result<(), MemoryError>;
}

impl<V: Materialized> AnySlot for Slot<V> {
    fn from(&self) -> u64 {
        self.last + 1
    }

    fn apply(&mut self, stored: &strataflow_log::StoredRecord) {
        self.state.apply(&stored.id, &stored.record);
        self.last = stored.seq;
        self.changed = true;
    }

    fn skip(&mut self, seq: u64) {
        self.last = seq;
    }

    fn save(&self, memory: &Memory, tenant: &str) -> Result<(), MemoryError> {
        if !self.changed {
            return Ok(());
        }
        let bytes = self.state.encode().map_err(MemoryError::Invalid)?;
        memory
            .store
            .save_view_chunks(&self.key, tenant, self.last, &bytes)?;
        Ok(())
    }
}
