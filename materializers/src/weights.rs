//! The weights view: use-only reinforcement (spec §13).
//!
//! Folded from a tenant's records. The tenant's turn counter is the number
//! of its user messages, counted in the order they were *said* (their source
//! time), not the order they reached the log: the turn at a source time `t`
//! is the number of the tenant's user messages said at or before `t`, over
//! all its threads. An event is formed at the turn of its block's last
//! message (mention count 1, last adopted then); each use receipt that
//! adopts it adds one mention and moves its last adoption to the turn of the
//! latest-said user message logged before the receipt. So the view depends
//! on which messages a tenant has and on where the use receipts fall, never
//! on how its threads interleaved in the log: an archive ingested thread
//! after thread, or served by concurrent writers, or backfilled after live
//! traffic, has the same weights as the same messages ingested in time
//! order. Search never appears in the fold, so it can never change a
//! weight. The effective weight applies the formula of
//! [`strataflow_operators::weights`] with the event's criticality floor, the
//! superseded cap and pins from the status view.

use std::collections::BTreeMap;

use strataflow_operators::weights::{
    SUPERSEDED_CAP, WeightState, criticality_floor, memory_weight_at,
};
use strataflow_record::RecordId;
use strataflow_record::record::Criticality;

use crate::event_status::{EventStatus, EventStatusView};

/// The tenant's turn clock: how many of its user messages were said at or
/// before a source time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnClock {
    /// Distinct source times (UTC ms) ascending, each with the number of
    /// user messages said at or before it.
    cumulative: Vec<(i64, u64)>,
}

impl TurnClock {
    /// The clock of user messages counted per source time (UTC ms).
    pub fn new(said: &BTreeMap<i64, u64>) -> Self {
        let mut total = 0u64;
        let cumulative = said
            .iter()
            .map(|(ms, n)| {
                total = total.saturating_add(*n);
                (*ms, total)
            })
            .collect();
        Self { cumulative }
    }

    /// The turn at a source time: user messages said at or before it; 0
    /// for `None` (before any user message).
    pub fn turn_at(&self, said_ms: Option<i64>) -> u64 {
        let Some(ms) = said_ms else { return 0 };
        let after = self.cumulative.partition_point(|(t, _)| *t <= ms);
        after
            .checked_sub(1)
            .and_then(|i| self.cumulative.get(i))
            .map_or(0, |(_, n)| *n)
    }

    /// The current turn: every user message of the tenant.
    pub fn now(&self) -> u64 {
        self.cumulative.last().map_or(0, |(_, n)| *n)
    }
}

/// One record of the fold, in log order (user messages are counted by the
/// [`TurnClock`], not here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightInput {
    /// A sealed block, with the source time of its last message.
    Block {
        /// Block id.
        id: RecordId,
        /// Source time (UTC ms) of its last message.
        said_ms: i64,
    },
    /// An event of a block.
    Event {
        /// Event id.
        id: RecordId,
        /// Its block.
        block: RecordId,
        /// Its criticality.
        criticality: Criticality,
        /// The latest source time of a user message logged before it (its
        /// formation time when its block is unknown).
        latest_said_ms: Option<i64>,
    },
    /// Events adopted by one use receipt.
    Use {
        /// The adopted events.
        events: Vec<RecordId>,
        /// The latest source time of a user message logged before the
        /// receipt: the adoption happens at that turn.
        latest_said_ms: Option<i64>,
    },
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
    /// Folds the inputs on the tenant's turn clock, then computes effective
    /// weights with the statuses.
    pub fn fold(
        clock: &TurnClock,
        inputs: impl IntoIterator<Item = WeightInput>,
        status: &EventStatusView,
    ) -> Self {
        let mut block_turn: BTreeMap<RecordId, u64> = BTreeMap::new();
        let mut events: BTreeMap<RecordId, (EventWeight, Criticality)> = BTreeMap::new();
        for input in inputs {
            match input {
                WeightInput::Block { id, said_ms } => {
                    block_turn.insert(id, clock.turn_at(Some(said_ms)));
                }
                WeightInput::Event {
                    id,
                    block,
                    criticality,
                    latest_said_ms,
                } => {
                    let formed = block_turn
                        .get(&block)
                        .copied()
                        .unwrap_or_else(|| clock.turn_at(latest_said_ms));
                    events.entry(id).or_insert((
                        EventWeight {
                            mention_count: 1,
                            last_adopted_turn: formed,
                            weight: 1.0,
                        },
                        criticality,
                    ));
                }
                WeightInput::Use {
                    events: mut ids,
                    latest_said_ms,
                } => {
                    let turn = clock.turn_at(latest_said_ms);
                    ids.sort_unstable();
                    ids.dedup();
                    for id in ids {
                        let visible = status.get(&id).is_none_or(|s| !s.status.is_hidden());
                        if let Some((w, _)) = events.get_mut(&id).filter(|_| visible) {
                            w.mention_count += 1;
                            w.last_adopted_turn = w.last_adopted_turn.max(turn);
                        }
                    }
                }
            }
        }
        let turn = clock.now();
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
        let mut h = blake3::Hasher::new_derive_key("strataflow view weights v2");
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

    /// User messages said at 1..=n ms.
    fn clock(n: i64) -> TurnClock {
        TurnClock::new(&(1..=n).map(|ms| (ms, 1)).collect())
    }

    /// A block whose last message was said at 3 ms, its event, 13 user
    /// messages in all.
    fn base() -> Vec<WeightInput> {
        vec![
            WeightInput::Block { id: B, said_ms: 3 },
            WeightInput::Event {
                id: E,
                block: B,
                criticality: Criticality::Routine,
                latest_said_ms: Some(3),
            },
        ]
    }

    #[test]
    fn the_clock_counts_user_messages_said_at_or_before_a_time() {
        let c = TurnClock::new(&BTreeMap::from([(10, 2), (20, 1), (30, 3)]));
        let turns: Vec<u64> = [
            None,
            Some(9),
            Some(10),
            Some(15),
            Some(20),
            Some(30),
            Some(99),
        ]
        .into_iter()
        .map(|t| c.turn_at(t))
        .collect();
        assert_eq!(turns, [0, 0, 2, 2, 3, 6, 6]);
        assert_eq!(c.now(), 6);
        assert_eq!(TurnClock::default().now(), 0);
    }

    #[test]
    fn an_unused_event_decays_from_its_formation() {
        let v = WeightsView::fold(&clock(13), base(), &EventStatusView::default());
        let w = v.get(&E).unwrap();
        assert_eq!(
            (w.mention_count, w.last_adopted_turn, v.current_turn),
            (1, 3, 13)
        );
        assert!((w.weight - (-0.15f64 * 10.0).exp()).abs() < 1e-12);
    }

    #[test]
    fn messages_said_earlier_but_logged_later_count_before_the_block() {
        // Two user messages said before the block's time arrive after it
        // (another thread backfilled later): the block was formed after
        // them, so its formation turn counts them.
        let mut said: BTreeMap<i64, u64> = (1..=13).map(|ms| (ms, 1)).collect();
        said.insert(0, 2);
        let v = WeightsView::fold(&TurnClock::new(&said), base(), &EventStatusView::default());
        let w = v.get(&E).unwrap();
        assert_eq!((w.last_adopted_turn, v.current_turn), (5, 15));
    }

    #[test]
    fn use_reinforces_and_resets_the_clock_search_does_not_exist_here() {
        let mut inputs = base();
        inputs.push(WeightInput::Use {
            events: vec![E, E],
            latest_said_ms: Some(13),
        });
        let v = WeightsView::fold(&clock(13), inputs, &EventStatusView::default());
        let w = v.get(&E).unwrap();
        assert_eq!((w.mention_count, w.last_adopted_turn), (2, 13));
        assert!((w.weight - 1.0).abs() < 1e-12);
        assert_ne!(
            v.digest(),
            WeightsView::fold(&clock(13), base(), &EventStatusView::default()).digest()
        );
    }

    #[test]
    fn a_use_never_moves_the_last_adoption_back() {
        let mut inputs = base();
        inputs.push(WeightInput::Use {
            events: vec![E],
            latest_said_ms: Some(2),
        });
        let v = WeightsView::fold(&clock(13), inputs, &EventStatusView::default());
        let w = v.get(&E).unwrap();
        assert_eq!((w.mention_count, w.last_adopted_turn), (2, 3));
    }
}
