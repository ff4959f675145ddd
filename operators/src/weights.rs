//! Effective memory weight with use-only reinforcement (spec §13.1).
//!
//! A memory's weight decays exponentially with the number of turns since it
//! was last *adopted* (used in an answer through a use receipt, spec §13.2).
//! Every adoption adds a mention, and more mentions slow the decay
//! (rehearsal). Searching, expanding and auto-activation never reinforce.
//!
//! ```text
//! forgotten / archived        → 0
//! t    = max(0, current_turn − last_adopted_turn)
//! n    = max(1, mention_count)
//! λ(n) = 0.15 / (1 + 1.5 · ln n)
//! w    = max(floor, exp(−λ(n) · t))
//! w    = min(w, forced_cap)       if a cap is set (superseded: 0.1)
//! pinned → 1                      (overrides the cap, never the forgotten check)
//! ```
//!
//! Pure functions: the current turn is a parameter, nothing reads a clock.
//! The `f64` results are ranking signals only; they are never stored in a
//! record.

use strataflow_record::record::Criticality;

/// Decay rate of a memory adopted once (`λ(1)`), per turn.
pub const BASE_DECAY: f64 = 0.15;

/// How strongly repeated adoption slows the decay: `λ(n) = BASE_DECAY / (1 + REHEARSAL_FACTOR · ln n)`.
pub const REHEARSAL_FACTOR: f64 = 1.5;

/// The forced cap of a superseded event: it stays searchable but ranks low.
pub const SUPERSEDED_CAP: f64 = 0.1;

/// The weight an event never decays below, by criticality: safety 1.0,
/// identity 0.9, preference 0.3, routine 0.
pub fn criticality_floor(c: Criticality) -> f64 {
    match c {
        Criticality::Safety => 1.0,
        Criticality::Identity => 0.9,
        Criticality::Preference => 0.3,
        Criticality::Routine => 0.0,
    }
}

/// What the weight of one memory depends on.
///
/// A view assembled by the caller from records (mention count and last
/// adoption turn from use receipts, status from governance records); it is not
/// itself a record, so it may hold floats.
#[derive(Clone, Copy, PartialEq, Debug, Default)]
pub struct WeightState {
    /// Number of times the memory was adopted (0 is treated as 1).
    pub mention_count: u32,
    /// The turn of the last adoption (or of creation, before any adoption).
    pub last_adopted_turn: u64,
    /// Pinned memories weigh 1 unless forgotten.
    pub pinned: bool,
    /// Lowest weight, usually [`criticality_floor`].
    pub floor: f64,
    /// Highest weight, if capped ([`SUPERSEDED_CAP`] for superseded events).
    pub forced_cap: Option<f64>,
    /// Forgotten or archived: weight 0, even when pinned.
    pub forgotten: bool,
}

/// The per-turn decay rate after `mention_count` adoptions:
/// `λ(n) = 0.15 / (1 + 1.5 · ln max(1, n))`.
pub fn decay_rate(mention_count: u32) -> f64 {
    let n = f64::from(mention_count.max(1));
    BASE_DECAY / (1.0 + REHEARSAL_FACTOR * n.ln())
}

/// The effective weight of a memory at `current_turn` (spec §13.1), in
/// `[0, 1]` for floors and caps in `[0, 1]`.
///
/// A `current_turn` earlier than the last adoption counts as no elapsed
/// turns (weight 1 before floor and cap).
pub fn memory_weight_at(w: &WeightState, current_turn: u64) -> f64 {
    if w.forgotten {
        return 0.0;
    }
    if w.pinned {
        return 1.0;
    }
    // Turn counts stay far below 2^53, so the conversion is exact in practice.
    let t = current_turn.saturating_sub(w.last_adopted_turn) as f64;
    let decayed = (-decay_rate(w.mention_count) * t).exp();
    let floored = decayed.max(w.floor);
    match w.forced_cap {
        Some(cap) => floored.min(cap),
        None => floored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(mention_count: u32, last_adopted_turn: u64) -> WeightState {
        WeightState {
            mention_count,
            last_adopted_turn,
            ..WeightState::default()
        }
    }

    fn close(a: f64, b: f64, eps: f64) -> bool {
        (a - b).abs() < eps
    }

    #[test]
    fn spec_decay_rates() {
        for (n, lambda) in [(0, 0.15), (1, 0.15), (2, 0.07354), (5, 0.04393)] {
            let got = decay_rate(n);
            assert!(close(got, lambda, 5e-6), "n={n}: {got} vs {lambda}");
        }
    }

    #[test]
    fn spec_weights_after_ten_turns() {
        for (n, expected) in [(1, 0.2231), (2, 0.4793)] {
            let got = memory_weight_at(&state(n, 5), 15);
            assert!(close(got, expected, 5e-5), "n={n}: {got} vs {expected}");
        }
        // n = 5, t = 10: exp(−0.4393).
        let got = memory_weight_at(&state(5, 0), 10);
        assert!(close(got, (-0.4393_f64).exp(), 1e-4), "{got}");
    }

    #[test]
    fn adoption_now_weighs_one() {
        // §13.2 test: after record_use, t = 0 and the weight is 1.
        assert_eq!(memory_weight_at(&state(3, 42), 42), 1.0);
        // A current turn before the last adoption counts as t = 0.
        assert_eq!(memory_weight_at(&state(1, 42), 7), 1.0);
    }

    #[test]
    fn weight_decreases_with_time_and_rehearsal_slows_it() {
        let mut previous = 1.0;
        for turn in 1..50 {
            let w = memory_weight_at(&state(1, 0), turn);
            assert!(w < previous);
            previous = w;
            assert!(memory_weight_at(&state(4, 0), turn) > w);
        }
    }

    #[test]
    fn criticality_floors() {
        assert_eq!(criticality_floor(Criticality::Safety), 1.0);
        assert_eq!(criticality_floor(Criticality::Identity), 0.9);
        assert_eq!(criticality_floor(Criticality::Preference), 0.3);
        assert_eq!(criticality_floor(Criticality::Routine), 0.0);
        let w = WeightState {
            floor: criticality_floor(Criticality::Preference),
            ..state(1, 0)
        };
        assert_eq!(memory_weight_at(&w, 1_000), 0.3);
        let w = WeightState {
            floor: criticality_floor(Criticality::Safety),
            ..state(1, 0)
        };
        assert_eq!(memory_weight_at(&w, 1_000), 1.0);
    }

    #[test]
    fn superseded_is_capped_unless_pinned() {
        // §22 item 10: memoryWeightAt(old) ≤ 0.1 unless pinned, even with a
        // safety floor and a fresh adoption.
        let superseded = WeightState {
            floor: criticality_floor(Criticality::Safety),
            forced_cap: Some(SUPERSEDED_CAP),
            ..state(7, 10)
        };
        for turn in [0, 10, 11, 100, 10_000] {
            assert!(memory_weight_at(&superseded, turn) <= SUPERSEDED_CAP);
        }
        assert_eq!(memory_weight_at(&superseded, 10), SUPERSEDED_CAP);
        let pinned = WeightState {
            pinned: true,
            ..superseded
        };
        assert_eq!(memory_weight_at(&pinned, 10_000), 1.0);
    }

    #[test]
    fn forgotten_is_zero_even_if_pinned() {
        let forgotten = WeightState {
            forgotten: true,
            pinned: true,
            floor: 1.0,
            ..state(9, 10)
        };
        assert_eq!(memory_weight_at(&forgotten, 10), 0.0);
        assert_eq!(memory_weight_at(&forgotten, 1_000), 0.0);
    }

    #[test]
    fn pinned_weighs_one() {
        let pinned = WeightState {
            pinned: true,
            ..state(1, 0)
        };
        assert_eq!(memory_weight_at(&pinned, 1_000_000), 1.0);
    }
}
