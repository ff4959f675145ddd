//! The event status view: active / superseded / forgotten per event, pins
//! and conflicts, folded from `Event` and `Governance` records.
//!
//! Rules (spec §15, DESIGN.md §2):
//! - an event is **forgotten** when the last forget/restore decision on it
//!   is a forget; a restore returns it to what it would be without the
//!   forget, so a superseded event stays superseded;
//! - otherwise it is **superseded** when an event that is not forgotten
//!   lists it in `supersedes`;
//! - otherwise it is **active**;
//! - it is **pinned** when the last pin/unpin decision is a pin;
//! - conflicts are symmetric: if A lists B in `conflicts_with`, both A and B
//!   show the other;
//! - an event created by an external memory import is **removed** when
//!   every import that created it has been undone (an `UndoImport`
//!   decision on its `ImportSource`); a removed event is hidden like a
//!   forgotten one, whatever other decisions say, and its `supersedes`
//!   and `conflicts_with` links are ignored, so the events it superseded
//!   return to what they would be without it.
//!
//! Governance decisions on one target are ordered by their `previous`
//! chain (depth, then id), never by arrival time, so the view does not
//! depend on log order.

use std::collections::{BTreeMap, BTreeSet};

use strataflow_record::RecordId;
use strataflow_record::record::{Event, Governance, GovernanceAction};

/// Status of an event.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    /// Current memory.
    Active,
    /// Replaced by a newer event; kept and still searchable.
    Superseded,
    /// Forgotten by a governance decision; kept in the log, hidden.
    Forgotten,
    /// Created by an external memory import that was undone; kept in the
    /// log, hidden, its links ignored.
    Removed,
}

impl EventStatus {
    /// Forgotten or removed: never searched, never in the graph.
    pub fn is_hidden(self) -> bool {
        matches!(self, Self::Forgotten | Self::Removed)
    }

    /// The snake_case name (`active`, `superseded`, `forgotten`, `removed`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Superseded => "superseded",
            Self::Forgotten => "forgotten",
            Self::Removed => "removed",
        }
    }
}

/// What the view knows about one event.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct EventState {
    /// The event.
    pub id: RecordId,
    /// Its status.
    pub status: EventStatus,
    /// Events that supersede it (not forgotten).
    pub superseded_by: Vec<RecordId>,
    /// Events it conflicts with, both directions.
    pub conflicts_with: Vec<RecordId>,
    /// Pinned by a governance decision.
    pub pinned: bool,
    /// Governance records on it, in chain order.
    pub governance: Vec<RecordId>,
}

/// The status of every event of a set of records.
#[derive(Clone, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct EventStatusView {
    events: BTreeMap<RecordId, EventState>,
}

impl EventStatusView {
    /// Folds events and governance records (in any order).
    pub fn fold(events: &[(RecordId, Event)], governance: &[(RecordId, Governance)]) -> Self {
        Self::fold_links(
            events.iter().map(|(id, e)| {
                (
                    *id,
                    e.temporal.supersedes.as_slice(),
                    e.temporal.conflicts_with.as_slice(),
                )
            }),
            governance
                .iter()
                .map(|(id, g)| (*id, g.target, g.action.clone(), g.previous)),
        )
    }

    /// Folds events given as `(id, supersedes, conflicts_with)` and
    /// governance decisions as `(id, target, action, previous)`.
    pub fn fold_links<'a>(
        events: impl Iterator<Item = (RecordId, &'a [RecordId], &'a [RecordId])>,
        governance: impl Iterator<Item = (RecordId, RecordId, GovernanceAction, Option<RecordId>)>,
    ) -> Self {
        Self::fold_with_imports(events, governance, std::iter::empty())
    }

    /// [`EventStatusView::fold_links`] with the external memory imports,
    /// given as `(import id, events it created)`.
    pub fn fold_with_imports<'a>(
        events: impl Iterator<Item = (RecordId, &'a [RecordId], &'a [RecordId])>,
        governance: impl Iterator<Item = (RecordId, RecordId, GovernanceAction, Option<RecordId>)>,
        imports: impl Iterator<Item = (RecordId, &'a [RecordId])>,
    ) -> Self {
        let events: Vec<(RecordId, &[RecordId], &[RecordId])> = events.collect();
        let governance: Vec<(RecordId, Governance)> = governance
            .map(|(id, target, action, previous)| {
                (
                    id,
                    Governance {
                        tenant: String::new(),
                        target,
                        action,
                        actor: strataflow_record::record::Actor::User,
                        reason: None,
                        previous,
                    },
                )
            })
            .collect();
        let by_target = chains(&governance);
        let mut forgotten = BTreeSet::new();
        let mut pinned = BTreeSet::new();
        for (target, chain) in &by_target {
            let last_forget = chain.iter().rev().find_map(|(_, g)| match g.action {
                GovernanceAction::Forget => Some(true),
                GovernanceAction::Restore => Some(false),
                _ => None,
            });
            if last_forget == Some(true) {
                forgotten.insert(*target);
            }
            let last_pin = chain.iter().rev().find_map(|(_, g)| match g.action {
                GovernanceAction::Pin => Some(true),
                GovernanceAction::Unpin => Some(false),
                _ => None,
            });
            if last_pin == Some(true) {
                pinned.insert(*target);
            }
        }
        let undone: BTreeSet<RecordId> = by_target
            .iter()
            .filter(|(_, chain)| {
                chain
                    .iter()
                    .any(|(_, g)| g.action == GovernanceAction::UndoImport)
            })
            .map(|(target, _)| *target)
            .collect();
        let mut created_by_live = BTreeSet::new();
        let mut created_by_undone = BTreeSet::new();
        for (import, created) in imports {
            let set = if undone.contains(&import) {
                &mut created_by_undone
            } else {
                &mut created_by_live
            };
            set.extend(created.iter().copied());
        }
        let removed: BTreeSet<RecordId> = created_by_undone
            .difference(&created_by_live)
            .copied()
            .collect();
        let mut superseded_by: BTreeMap<RecordId, BTreeSet<RecordId>> = BTreeMap::new();
        let mut conflicts: BTreeMap<RecordId, BTreeSet<RecordId>> = BTreeMap::new();
        for (id, supersedes, conflicts_with) in &events {
            if removed.contains(id) {
                continue;
            }
            if !forgotten.contains(id) {
                for old in *supersedes {
                    superseded_by.entry(*old).or_default().insert(*id);
                }
            }
            for other in conflicts_with.iter().filter(|o| !removed.contains(o)) {
                conflicts.entry(*id).or_default().insert(*other);
                conflicts.entry(*other).or_default().insert(*id);
            }
        }
        let mut view = BTreeMap::new();
        for (id, _, _) in &events {
            // default: an event nothing supersedes or conflicts with, or no
            // governance targets, has empty lists.
            let by: Vec<RecordId> = superseded_by
                .get(id)
                .map(|s| s.iter().copied().filter(|x| x != id).collect())
                .unwrap_or_default();
            let status = if removed.contains(id) {
                EventStatus::Removed
            } else if forgotten.contains(id) {
                EventStatus::Forgotten
            } else if !by.is_empty() {
                EventStatus::Superseded
            } else {
                EventStatus::Active
            };
            view.insert(
                *id,
                EventState {
                    id: *id,
                    status,
                    superseded_by: by,
                    conflicts_with: conflicts
                        .get(id)
                        .map(|s| s.iter().copied().collect())
                        .unwrap_or_default(),
                    pinned: pinned.contains(id),
                    governance: by_target
                        .get(id)
                        .map(|c| c.iter().map(|(g, _)| *g).collect())
                        .unwrap_or_default(),
                },
            );
        }
        Self { events: view }
    }

    /// The state of one event.
    pub fn get(&self, id: &RecordId) -> Option<&EventState> {
        self.events.get(id)
    }

    /// Every event's state, ordered by id.
    pub fn iter(&self) -> impl Iterator<Item = &EventState> {
        self.events.values()
    }

    /// Whether an event is known and neither forgotten nor removed.
    pub fn is_visible(&self, id: &RecordId) -> bool {
        self.events.get(id).is_some_and(|s| !s.status.is_hidden())
    }

    /// Ids of the active events.
    pub fn active(&self) -> Vec<RecordId> {
        self.events
            .values()
            .filter(|s| s.status == EventStatus::Active)
            .map(|s| s.id)
            .collect()
    }

    /// Counts per status.
    pub fn counts(&self) -> BTreeMap<EventStatus, usize> {
        let mut out = BTreeMap::new();
        for s in self.events.values() {
            *out.entry(s.status).or_insert(0) += 1;
        }
        out
    }

    /// blake3 hex of the canonical content (ids, statuses, links, pins).
    pub fn digest(&self) -> String {
        let mut h = blake3::Hasher::new_derive_key("strataflow view event_status v1");
        for s in self.events.values() {
            h.update(s.id.as_bytes());
            h.update(&[s.status as u8, u8::from(s.pinned)]);
            for list in [&s.superseded_by, &s.conflicts_with, &s.governance] {
                h.update(&(list.len() as u64).to_be_bytes());
                for id in list {
                    h.update(id.as_bytes());
                }
            }
        }
        h.finalize().to_hex().to_string()
    }
}

/// The latest governance record on a target (the end of its chain).
pub fn chain_tail(governance: &[(RecordId, Governance)]) -> Option<RecordId> {
    let chains = chains(governance);
    chains
        .values()
        .next()
        .and_then(|c| c.last())
        .map(|(id, _)| *id)
}

/// Governance records per target, in chain order (depth, then id).
fn chains(
    governance: &[(RecordId, Governance)],
) -> BTreeMap<RecordId, Vec<(RecordId, &Governance)>> {
    let by_id: BTreeMap<RecordId, &Governance> =
        governance.iter().map(|(id, g)| (*id, g)).collect();
    let depth = |mut id: RecordId| {
        let mut d = 0usize;
        while let Some(prev) = by_id.get(&id).and_then(|g| g.previous) {
            d += 1;
            id = prev;
            if d > by_id.len() {
                break;
            }
        }
        d
    };
    let mut out: BTreeMap<RecordId, Vec<(usize, RecordId, &Governance)>> = BTreeMap::new();
    for (id, g) in governance {
        out.entry(g.target).or_default().push((depth(*id), *id, g));
    }
    out.into_iter()
        .map(|(target, mut v)| {
            v.sort_by_key(|a| (a.0, a.1));
            (target, v.into_iter().map(|(_, id, g)| (id, g)).collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use strataflow_record::SourceTime;
    use strataflow_record::record::{
        Actor, Criticality, EventTemporal, EventType, Occurrence, Precision, Scope, TimeBasis,
    };

    fn event(title: &str, supersedes: Vec<RecordId>, conflicts: Vec<RecordId>) -> Event {
        Event {
            tenant: String::new(),
            block: RecordId([9; 32]),
            source_messages: vec![RecordId([8; 32])],
            title: title.into(),
            summary: title.into(),
            narrative: title.into(),
            tags: vec![],
            quotes: vec![],
            temporal: EventTemporal {
                mentioned_at: SourceTime::utc_without_offset(0),
                happened_start: None,
                happened_end: None,
                original_text: None,
                precision: Precision::Unknown,
                basis: TimeBasis::Unknown,
                status: Occurrence::Occurred,
                participants: vec![],
                event_type: EventType::Other,
                supersedes,
                conflicts_with: conflicts,
            },
            scope: Scope::User,
            criticality: Criticality::Routine,
            confidence_milli: 800,
        }
    }

    fn gov(target: RecordId, action: GovernanceAction, previous: Option<RecordId>) -> Governance {
        Governance {
            tenant: String::new(),
            target,
            action,
            actor: Actor::User,
            reason: None,
            previous,
        }
    }

    const A: RecordId = RecordId([1; 32]);
    const B: RecordId = RecordId([2; 32]);
    const C: RecordId = RecordId([3; 32]);
    const G1: RecordId = RecordId([11; 32]);
    const G2: RecordId = RecordId([12; 32]);
    const G3: RecordId = RecordId([13; 32]);

    #[test]
    fn supersede_marks_the_old_event_and_keeps_it() {
        let events = vec![
            (A, event("plan", vec![], vec![])),
            (B, event("cancel", vec![A], vec![])),
        ];
        let v = EventStatusView::fold(&events, &[]);
        assert_eq!(v.get(&A).map(|s| s.status), Some(EventStatus::Superseded));
        assert_eq!(v.get(&A).map(|s| s.superseded_by.clone()), Some(vec![B]));
        assert_eq!(v.get(&B).map(|s| s.status), Some(EventStatus::Active));
        assert_eq!(v.active(), vec![B]);
    }

    #[test]
    fn restore_returns_to_what_it_was_and_superseded_stays_superseded() {
        let events = vec![
            (A, event("plan", vec![], vec![])),
            (B, event("cancel", vec![A], vec![])),
        ];
        let forget = gov(A, GovernanceAction::Forget, None);
        let restore = gov(A, GovernanceAction::Restore, Some(G1));
        let v = EventStatusView::fold(&events, &[(G1, forget.clone())]);
        assert_eq!(v.get(&A).map(|s| s.status), Some(EventStatus::Forgotten));
        let v = EventStatusView::fold(&events, &[(G2, restore.clone()), (G1, forget)]);
        assert_eq!(v.get(&A).map(|s| s.status), Some(EventStatus::Superseded));
        assert_eq!(v.get(&A).map(|s| s.governance.clone()), Some(vec![G1, G2]));
    }

    #[test]
    fn a_forgotten_superseding_event_releases_the_old_one() {
        let events = vec![
            (A, event("plan", vec![], vec![])),
            (B, event("cancel", vec![A], vec![])),
        ];
        let v = EventStatusView::fold(&events, &[(G1, gov(B, GovernanceAction::Forget, None))]);
        assert_eq!(v.get(&A).map(|s| s.status), Some(EventStatus::Active));
        assert!(!v.is_visible(&B));
    }

    #[test]
    fn conflicts_are_recorded_both_ways_and_pins_follow_the_chain() {
        let events = vec![
            (A, event("a", vec![], vec![])),
            (C, event("c", vec![], vec![A])),
        ];
        let pin = gov(A, GovernanceAction::Pin, None);
        let unpin = gov(A, GovernanceAction::Unpin, Some(G1));
        let repin = gov(A, GovernanceAction::Pin, Some(G2));
        let v = EventStatusView::fold(&events, &[(G3, repin), (G1, pin), (G2, unpin)]);
        assert_eq!(v.get(&A).map(|s| s.conflicts_with.clone()), Some(vec![C]));
        assert_eq!(v.get(&C).map(|s| s.conflicts_with.clone()), Some(vec![A]));
        assert_eq!(v.get(&A).map(|s| s.pinned), Some(true));
        assert_eq!(v.get(&A).map(|s| s.status), Some(EventStatus::Active));
    }

    #[test]
    fn the_view_does_not_depend_on_record_order() {
        let events = vec![
            (A, event("plan", vec![], vec![])),
            (B, event("cancel", vec![A], vec![C])),
            (C, event("c", vec![], vec![])),
        ];
        let g = vec![
            (G1, gov(C, GovernanceAction::Forget, None)),
            (G2, gov(C, GovernanceAction::Restore, Some(G1))),
        ];
        let mut rev_events = events.clone();
        rev_events.reverse();
        let mut rev_g = g.clone();
        rev_g.reverse();
        let a = EventStatusView::fold(&events, &g);
        let b = EventStatusView::fold(&rev_events, &rev_g);
        assert_eq!(a, b);
        assert_eq!(a.digest(), b.digest());
        assert_ne!(a.digest(), EventStatusView::fold(&events, &g[..1]).digest());
    }

    #[test]
    fn an_undone_import_removes_its_events_and_releases_what_they_superseded() {
        const IMPORT: RecordId = RecordId([20; 32]);
        let events = [
            (A, event("plan", vec![], vec![])),
            (B, event("imported correction", vec![A], vec![])),
            (C, event("imported conflict", vec![], vec![A])),
        ];
        let created = [B, C];
        let fold = |g: &[(RecordId, Governance)]| {
            EventStatusView::fold_with_imports(
                events.iter().map(|(id, e)| {
                    (
                        *id,
                        e.temporal.supersedes.as_slice(),
                        e.temporal.conflicts_with.as_slice(),
                    )
                }),
                g.iter()
                    .map(|(id, g)| (*id, g.target, g.action.clone(), g.previous)),
                std::iter::once((IMPORT, created.as_slice())),
            )
        };
        let live = fold(&[]);
        assert_eq!(
            live.get(&A).map(|s| s.status),
            Some(EventStatus::Superseded)
        );
        assert_eq!(
            live.get(&A).map(|s| s.conflicts_with.clone()),
            Some(vec![C])
        );
        let undone = fold(&[(G1, gov(IMPORT, GovernanceAction::UndoImport, None))]);
        assert_eq!(undone.get(&A).map(|s| s.status), Some(EventStatus::Active));
        assert_eq!(
            undone.get(&A).map(|s| s.conflicts_with.clone()),
            Some(vec![])
        );
        assert_eq!(undone.get(&B).map(|s| s.status), Some(EventStatus::Removed));
        assert!(!undone.is_visible(&C));
        // A restore does not bring a removed event back.
        let restored = fold(&[
            (G1, gov(IMPORT, GovernanceAction::UndoImport, None)),
            (G2, gov(B, GovernanceAction::Restore, None)),
        ]);
        assert_eq!(
            restored.get(&B).map(|s| s.status),
            Some(EventStatus::Removed)
        );
        assert_ne!(live.digest(), undone.digest());
    }

    #[test]
    fn chain_tail_is_the_latest_decision() {
        let g = vec![
            (G2, gov(A, GovernanceAction::Restore, Some(G1))),
            (G1, gov(A, GovernanceAction::Forget, None)),
        ];
        assert_eq!(chain_tail(&g), Some(G2));
        assert_eq!(chain_tail(&[]), None);
    }
}
