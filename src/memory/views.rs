//! Persisted views of a [`Memory`]: refreshed incrementally from the log,
//! verified against a rebuild.

use strataflow_materializers::view::{EventStatusState, Materialized, WeightsState};

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
        let (from, mut state) = match self.store.view_state(V::NAME, tenant)? {
            Some((seq, bytes)) => match serde_json::from_slice::<V>(&bytes) {
                Ok(state) => (seq + 1, state),
                // An unreadable state (older build) is rebuilt, never trusted.
                Err(_) => (1, V::default()),
            },
            None => (1, V::default()),
        };
        let mut last = from.saturating_sub(1);
        let mut changed = false;
        for item in self.store.scan(from) {
            let stored = item?;
            last = stored.seq;
            if stored.record.tenant() == tenant {
                state.apply(&stored.id, &stored.record);
                changed = true;
            }
        }
        if changed || from == 1 {
            let bytes =
                serde_json::to_vec(&state).map_err(|e| MemoryError::Invalid(e.to_string()))?;
            self.store.save_view_state(V::NAME, tenant, last, &bytes)?;
        }
        Ok((state, last))
    }

    /// Folds a view of a tenant from the first record, without saving.
    pub fn rebuild<V: Materialized>(&self, tenant: &str) -> Result<V, MemoryError> {
        let mut state = V::default();
        for item in self.store.scan(1) {
            let stored = item?;
            if stored.record.tenant() == tenant {
                state.apply(&stored.id, &stored.record);
            }
        }
        Ok(state)
    }

    /// Refreshes every persisted view of a tenant and reports their digests;
    /// with `verify`, also rebuilds each from the log and reports that digest.
    pub fn views(&self, tenant: &str, verify: bool) -> Result<Vec<ViewReport>, MemoryError> {
        let (status, seq) = self.refresh::<EventStatusState>(tenant)?;
        let (weights, wseq) = self.refresh::<WeightsState>(tenant)?;
        Ok(vec![
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
        ])
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
