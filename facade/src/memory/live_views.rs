//! The persisted views kept up to date while an ingest commits: each
//! committed record, already decoded in the run, is applied to the views
//! of its tenant on the run's writer thread, so the refresh that ends the
//! ingest finds them at the end of the run instead of reading back, decoding
//! and hashing every record the run wrote (about 0.75 s of a 6 s backfill of
//! 200,000 messages).
//!
//! The views see the same records in the same order as a refresh would
//! (same states, same digests), under two rules that fall back to that
//! refresh rather than guess:
//!
//! - a tenant is followed only if each of its views had applied every
//!   record before the run (its `from` is the run's first sequence or
//!   later); the others are left to the refresh, from where they stand;
//! - the records given must follow one another from the run's first
//!   sequence: a gap (a record another writer or a pass before the run
//!   committed) stops the following, and nothing is saved.
//!
//! [`LiveViews::finish`] saves the followed views at the last sequence seen
//! (the refresh then reads only what came after, such as retried runs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use strataflow_log::Store;
use strataflow_log::envelope::Encoded;
use strataflow_materializers::view::{
    BlockLevelsState, EventStatusState, GraphMembership, Materialized, WeightsState,
};
use strataflow_pipeline::commit_observer::CommitObserver;

use super::views::{AnySlot, Logged, SegmentSlot};
use super::{Memory, MemoryError};

/// The views of an ingest's tenants, fed as the run commits (see the
/// module docs).
pub(crate) struct LiveViews {
    store: Arc<Store>,
    graph_key: String,
    graph_fresh: Box<dyn Fn() -> GraphMembership + Send + Sync>,
    levels_key: String,
    levels_fresh: Box<dyn Fn() -> BlockLevelsState + Send + Sync>,
    segment_records: u64,
    following: Mutex<Following>,
}

/// What the views have been given so far.
struct Following {
    /// The run's first sequence (the log's last before it, plus one).
    start: u64,
    /// The sequence the next record must have; `None` once a gap or an
    /// error stopped the following.
    next: Option<u64>,
    /// Per tenant, its views, or `None` for a tenant left to the refresh.
    tenants: HashMap<String, Option<Vec<Box<dyn AnySlot>>>>,
}

impl LiveViews {
    /// The default profile's views, to follow a run that starts after the
    /// log's current end.
    pub(crate) fn new(memory: &Memory) -> Result<Self, MemoryError> {
        let (graph_key, graph_fresh) = memory.graph_membership_key(None)?;
        let (levels_key, levels_fresh) = memory.block_levels_key(None)?;
        let start = memory.store.last_seq()?.unwrap_or(0) + 1;
        Ok(Self {
            store: Arc::clone(&memory.store),
            graph_key,
            graph_fresh: Box::new(graph_fresh),
            levels_key,
            levels_fresh: Box::new(levels_fresh),
            segment_records: memory.view_segment_records,
            following: Mutex::new(Following {
                start,
                next: Some(start),
                tenants: HashMap::new(),
            }),
        })
    }

    /// A tenant's views, loaded as last saved; `None` when one of them has
    /// not applied every record before the run.
    fn load(&self, tenant: &str, start: u64) -> Result<Option<Vec<Box<dyn AnySlot>>>, MemoryError> {
        let store = &*self.store;
        let records = self.segment_records;
        let slots: Vec<Box<dyn AnySlot>> = vec![
            Box::new(SegmentSlot::load(
                store,
                EventStatusState::NAME,
                tenant,
                EventStatusState::default,
                false,
                records,
            )?),
            Box::new(SegmentSlot::load(
                store,
                WeightsState::NAME,
                tenant,
                WeightsState::default,
                false,
                records,
            )?),
            Box::new(SegmentSlot::load(
                store,
                &self.graph_key,
                tenant,
                &self.graph_fresh,
                false,
                records,
            )?),
            Box::new(SegmentSlot::load(
                store,
                &self.levels_key,
                tenant,
                &self.levels_fresh,
                false,
                records,
            )?),
        ];
        Ok(slots.iter().all(|s| s.from() >= start).then_some(slots))
    }

    /// Applies one committed batch (see [`CommitObserver::committed`]).
    fn apply(
        &self,
        following: &mut Following,
        records: &[(u64, &Encoded)],
    ) -> Result<(), MemoryError> {
        for &(seq, encoded) in records {
            if following.next != Some(seq) {
                following.next = None;
                return Ok(());
            }
            following.next = seq.checked_add(1);
            let record = encoded.record();
            let tenant = record.tenant();
            if !following.tenants.contains_key(tenant) {
                let slots = self.load(tenant, following.start)?;
                following.tenants.insert(tenant.to_owned(), slots);
            }
            let Some(Some(slots)) = following.tenants.get_mut(tenant) else {
                continue;
            };
            let id = encoded.id();
            for slot in slots {
                if seq >= slot.from() {
                    slot.apply(
                        &self.store,
                        Logged {
                            seq,
                            id: &id,
                            record,
                        },
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Saves the followed views at the last sequence given (every other
    /// tenant's record up to it was seen); nothing when the following
    /// stopped. Returns the tenants saved.
    pub(crate) fn finish(&self) -> Result<usize, MemoryError> {
        // A panic while applying left a view half applied: not saved.
        let Ok(mut lock) = self.following.lock() else {
            return Ok(0);
        };
        let following = std::mem::replace(
            &mut *lock,
            Following {
                start: 0,
                next: None,
                tenants: HashMap::new(),
            },
        );
        drop(lock);
        let Some(next) = following.next else {
            return Ok(0);
        };
        let last = next - 1;
        let mut saved = 0;
        let mut tenants: Vec<(String, Vec<Box<dyn AnySlot>>)> = following
            .tenants
            .into_iter()
            .filter_map(|(tenant, slots)| Some((tenant, slots?)))
            .collect();
        // Saved in tenant order (the map's order is not the log's concern,
        // but a deterministic order keeps the writes reproducible).
        tenants.sort_by(|a, b| a.0.cmp(&b.0));
        for (tenant, slots) in tenants {
            for mut slot in slots {
                slot.skip(last);
                slot.finish(&self.store, &tenant, true, false)?;
            }
            saved += 1;
        }
        Ok(saved)
    }
}

impl CommitObserver for LiveViews {
    /// An error (a read or write of the store) stops the following: the
    /// refresh after the run brings the views up to date, or reports it.
    fn committed(&self, records: &[(u64, &Encoded)]) {
        // A panic while applying left a view half applied: stopped.
        let Ok(mut following) = self.following.lock() else {
            return;
        };
        if following.next.is_none() {
            return;
        }
        if let Err(e) = self.apply(&mut following, records) {
            tracing::warn!(error = %e, "views stopped following the ingest; the refresh after it catches them up");
            following.next = None;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use strataflow_pipeline::ingest::{self, IngestOptions, OnInvalid};
    use strataflow_pipeline::source::{SourceItem, locomo};

    use super::*;

    /// LoCoMo conv-26's messages in tenant `t`, cut in two.
    fn halves() -> (Vec<SourceItem>, Vec<SourceItem>) {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/locomo/conv-26.json");
        let mut first = locomo::read(&file, "t").unwrap();
        let second = first.split_off(first.len() / 2);
        (first, second)
    }

    fn options(memory: &Memory, live: Option<&Arc<LiveViews>>) -> IngestOptions {
        let mut options = memory.ingest_options().unwrap();
        options.durability = strataflow_log::Durability::Buffered;
        options.observer = live.map(|l| Arc::clone(l) as Arc<dyn CommitObserver>);
        options
    }

    /// The last sequence each of tenant `t`'s four views was saved at.
    fn saved_at(memory: &Memory) -> Vec<Option<u64>> {
        let (graph, _) = memory.graph_membership_key(None).unwrap();
        let (levels, _) = memory.block_levels_key(None).unwrap();
        [EventStatusState::NAME, WeightsState::NAME, &graph, &levels]
            .iter()
            .map(|key| memory.store.view_segments(key, "t").unwrap().map(|h| h.0))
            .collect()
    }

    /// Runs `items` with `live` following (if any) and finishes it.
    fn run(memory: &Memory, items: &Vec<SourceItem>, live: Option<&Arc<LiveViews>>) -> usize {
        let options = options(memory, live);
        let stats = ingest::ingest(
            &memory.store,
            items,
            &options,
            OnInvalid::Refuse,
            &mut |_| {},
        )
        .unwrap();
        assert!(stats.events > 0, "derived: {stats:?}");
        live.map_or(0, |l| l.finish().unwrap())
    }

    /// Views following two ingests, one after the other, are saved at the
    /// last record of each without a refresh, and are what a rebuild from
    /// the log folds.
    #[test]
    fn views_follow_ingests_to_their_last_record_and_equal_a_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory::open(dir.path()).unwrap();
        let (first, second) = halves();
        for items in [&first, &second] {
            let live = Arc::new(LiveViews::new(&memory).unwrap());
            assert_eq!(run(&memory, items, Some(&live)), 1, "tenant t followed");
            let last = memory.store.last_seq().unwrap();
            assert_eq!(saved_at(&memory), vec![last; 4]);
        }
        let reports = memory
            .views(
                &["t".to_owned()],
                &crate::ViewsOptions {
                    verify: true,
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(reports.len() >= 4);
        for r in &reports {
            assert_eq!(Some(&r.digest), r.rebuilt.as_ref(), "{}", r.view);
        }
    }

    /// Records committed after the views were loaded and before the run
    /// (another writer) stop the following: nothing is saved, and the
    /// refresh is left to catch up. A tenant whose views had not applied
    /// every earlier record is not followed either.
    #[test]
    fn a_gap_or_a_view_behind_the_log_is_left_to_the_refresh() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory::open(dir.path()).unwrap();
        let (first, second) = halves();
        let early = Arc::new(LiveViews::new(&memory).unwrap());
        run(&memory, &first, None);
        assert_eq!(run(&memory, &second, Some(&early)), 0, "a gap stops it");
        assert_eq!(saved_at(&memory), vec![None; 4]);
        // No view was saved: they stand at the start of the log, behind it.
        let behind = Arc::new(LiveViews::new(&memory).unwrap());
        let mut more = second;
        for m in more.iter_mut().flatten() {
            m.thread = format!("{}-again", m.thread);
        }
        assert_eq!(
            run(&memory, &more, Some(&behind)),
            0,
            "views behind the log"
        );
        assert_eq!(saved_at(&memory), vec![None; 4]);
    }

    /// An ingest given an observer of its own keeps it (told of every
    /// record the run commits); the views are then brought up to date by
    /// the refresh at the end.
    #[test]
    fn a_callers_observer_is_kept() {
        use std::sync::atomic::{AtomicU64, Ordering};
        struct Counting(AtomicU64);
        impl CommitObserver for Counting {
            fn committed(&self, records: &[(u64, &Encoded)]) {
                self.0.fetch_add(records.len() as u64, Ordering::SeqCst);
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory::open(dir.path()).unwrap();
        let (first, _) = halves();
        let counting = Arc::new(Counting(AtomicU64::new(0)));
        let mut options = options(&memory, None);
        options.observer = Some(Arc::clone(&counting) as Arc<dyn CommitObserver>);
        memory
            .ingest_source(&first, &options, OnInvalid::Refuse, &mut |_| {})
            .unwrap();
        let last = memory.store.last_seq().unwrap();
        assert_eq!(Some(counting.0.load(Ordering::SeqCst)), last);
        assert_eq!(saved_at(&memory), vec![last; 4]);
    }
}
