//! The weights view: use-only reinforcement (spec §13).
//!
//! Folded from a tenant's records in log order. The tenant's turn counter
//! is the number of its user messages so far. An event is formed at the
//! turn its block was sealed (mention count 1, last adopted then); each use
//! receipt that adopts it adds one mention and moves its last adoption to
//! the receipt's turn. Search never appears in the fold, so it can never
//! change a weight. The effective weight applies the formula of
//! [`strataflow_operators::weights`] with the event's criticality floor,
//! the superseded cap and pins from the status view.

use std::collections::BTreeMap;

use strataflow_operators::weights::{
    SUPERSEDED_CAP, WeightState, criticality_floor, memory_weight_at,
};
use strataflow_record::RecordId;
use strataflow_record::record::Criticality;

use crate::event_status::{EventStatus, EventStatusView};

/// One record of the fold, in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightInput {
    /// A user message: the turn counter moves on.
    UserMessage,
    /// A sealed block.
    Block(RecordId),
    /// An event of a block.
    Event {
        /// Event id.
        id: RecordId,
        /// Its block.
        block: RecordId,
        /// Its criticality.
        criticality: Criticality,
    },
    /// Events adopted by one use receipt.
    Use(Vec<RecordId>),
}

/// Reinforcement state of one event.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct EventWeight {
    /// Times adopted, plus one for its formation.
    pub mention_count: u32,
    /// Turn of the last adoption (or formation).
    pub last_adopted_turn: u64,
    /// Effective weight now.
    pub weight: f64,
}

/// Weights of every event of a tenant.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct WeightsView {
    /// The tenant's current turn.
    pub current_turn: u64,
    events: BTreeMap<RecordId, (EventWeight, Criticality)>,
}

impl WeightsView {
    /// Folds the inputs, then computes effective weights with the statuses.
    pub fn fold(inputs: impl IntoIterator<Item = WeightInput>, status: &EventStatusView) -> Self {
        let mut turn = 0u64;
        let mut block_turn: BTreeMap<RecordId, u64> = BTreeMap::new();
        let mut events: BTreeMap<RecordId, (EventWeight, Criticality)> = BTreeMap::new();
        for input in inputs {
            match input {
                WeightInput::UserMessage => turn += 1,
                WeightInput::Block(id) => {
                    block_turn.insert(id, turn);
                }
                WeightInput::Event {
                    id,
                    block,
                    criticality,
                } => {
                    let formed = block_turn.get(&block).copied().unwrap_or(turn);
                    events.entry(id).or_insert((
                        EventWeight {
                            mention_count: 1,
                            last_adopted_turn: formed,
                            weight: 1.0,
                        },
                        criticality,
                    ));
                }
                WeightInput::Use(ids) => {
                    let mut ids = ids;
                    ids.sort_unstable();
                    ids.dedup();
                    for id in ids {
                        let visible = status.get(&id).is_none_or(|s| !s.status.is_hidden());
                        if let Some((w, _)) = events.get_mut(&id).filter(|_| visible) {
                            w.mention_count += 1;
                            w.last_adopted_turn = turn;
                        }
                    }
                }
            }
        }
        for (id, (w, criticality)) in &mut events {
            let state = status.get(id);
            let s = WeightState {
                mention_count: w.mention_count,
                last_adopted_turn: w.last_adopted_turn,
                pinned: state.is_some_and(|s| s.pinned),
                floor: criticality_floor(*criticality),
                forced_cap: state
                    .filter(|s| s.status == EventStatus::Superseded)
                    .map(|_| SUPERSEDED_CAP),
                forgotten: state.is_some_and(|s| s.status.is_hidden()),
            };
            w.weight = memory_weight_at(&s, turn);
        }
        Self {
            current_turn: turn,
            events,
        }
    }

    /// The weight of an event.
    pub fn get(&self, id: &RecordId) -> Option<&EventWeight> {
        self.events.get(id).map(|(w, _)| w)
    }

    /// Every event's weight, by event id.
    pub fn iter(&self) -> impl Iterator<Item = (&RecordId, &EventWeight)> {
        self.events.iter().map(|(id, (w, _))| (id, w))
    }

    /// blake3 hex over the canonical content: ids, mention counts, last
    /// adoption turns and the current turn (weights are derived from these,
    /// so no float enters the digest).
    pub fn digest(&self) -> String {
        let mut h = blake3::Hasher::new_derive_key("strataflow view weights v1");
        h.update(&self.current_turn.to_be_bytes());
        for (id, (w, _)) in &self.events {
            h.update(id.as_bytes());
            h.update(&w.mention_count.to_be_bytes());
            h.update(&w.last_adopted_turn.to_be_bytes());
        }
        h.finalize().to_hex().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: RecordId = RecordId([1; 32]);
    const E: RecordId = RecordId([2; 32]);

    fn base() -> Vec<WeightInput> {
        let mut v = vec![WeightInput::UserMessage; 3];
        v.push(WeightInput::Block(B));
        v.push(WeightInput::Event {
            id: E,
            block: B,
            criticality: Criticality::Routine,
        });
        v.extend(vec![WeightInput::UserMessage; 10]);
        v
    }

    #[test]
    fn an_unused_event_decays_from_its_formation() {
        let v = WeightsView::fold(base(), &EventStatusView::default());
        let w = v.get(&E).unwrap();
        assert_eq!(
            (w.mention_count, w.last_adopted_turn, v.current_turn),
            (1, 3, 13)
        );
        assert!((w.weight - (-0.15f64 * 10.0).exp()).abs() < 1e-12);
    }

    #[test]
    fn use_reinforces_and_resets_the_clock_search_does_not_exist_here() {
        let mut inputs = base();
        inputs.push(WeightInput::Use(vec![E, E]));
        let v = WeightsView::fold(inputs, &EventStatusView::default());
        let w = v.get(&E).unwrap();
        assert_eq!((w.mention_count, w.last_adopted_turn), (2, 13));
        assert!((w.weight - 1.0).abs() < 1e-12);
        assert_ne!(
            v.digest(),
            WeightsView::fold(base(), &EventStatusView::default()).digest()
        );
    }
}
