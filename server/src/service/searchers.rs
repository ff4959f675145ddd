//! The searchers a server keeps in memory, one per tenant and profile,
//! caught up with the log by sequence before each search (instead of
//! decoding the tenant's whole search snapshot on every request).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use strataflow::{Memory, MemoryError, Searcher};

/// Searchers kept at most; past it the least recently used is dropped
/// (it is rebuilt from its snapshot when asked for again).
const CAPACITY: usize = 64;

type Key = (String, Option<String>);

/// One cached searcher and when it was last used.
struct Slot {
    searcher: Arc<RwLock<Option<Searcher>>>,
    used: u64,
}

/// The cache.
#[derive(Default)]
pub struct Searchers {
    slots: Mutex<(u64, HashMap<Key, Slot>)>,
}

impl Searchers {
    /// Runs `f` on the tenant's searcher under `profile`, brought up to
    /// the end of the log first. Searches of one tenant run side by side;
    /// a catch-up waits for them and they for it.
    pub fn with<T>(
        &self,
        memory: &Memory,
        tenant: &str,
        profile: Option<&str>,
        f: impl FnOnce(&Searcher) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let slot = self.slot(tenant, profile);
        let last = memory.last_seq()?;
        let fresh = slot
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|s| s.last_seq() >= last);
        if !fresh {
            let mut guard = slot.write().unwrap_or_else(PoisonError::into_inner);
            match guard.as_mut() {
                Some(s) if s.last_seq() >= last => {}
                Some(s) => memory.refresh_searcher(s)?,
                None => *guard = Some(memory.tenant(tenant).searcher(profile)?),
            }
        }
        let guard = slot.read().unwrap_or_else(PoisonError::into_inner);
        match guard.as_ref() {
            Some(s) => f(s),
            // Only a failed build leaves the slot empty, and it returned
            // its error above; build it for this call then.
            None => f(&memory.tenant(tenant).searcher(profile)?),
        }
    }

    fn slot(&self, tenant: &str, profile: Option<&str>) -> Arc<RwLock<Option<Searcher>>> {
        let mut guard = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let (clock, slots) = &mut *guard;
        *clock += 1;
        let now = *clock;
        let key = (tenant.to_owned(), profile.map(str::to_owned));
        if let Some(slot) = slots.get_mut(&key) {
            slot.used = now;
            return Arc::clone(&slot.searcher);
        }
        if slots.len() >= CAPACITY {
            let oldest = slots
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                slots.remove(&oldest);
            }
        }
        let searcher = Arc::new(RwLock::new(None));
        slots.insert(
            key,
            Slot {
                searcher: Arc::clone(&searcher),
                used: now,
            },
        );
        searcher
    }
}
