//! Block decay and expansion (spec §6, V2 semantics).
//!
//! A ready block carries a pointer anchor: a level and the thread's
//! ready-block position at which that level was set. A new block anchors at
//! L5 at its own position; an expansion re-anchors at the chosen level and the
//! thread's latest ready position. The level shown now is the anchor level
//! minus the number of levels dropped since then:
//!
//! ```text
//! age     = max(0, latest_position − anchor_position)
//! w       = exp(−λ · age)                      λ = 0.30 by default
//! dropped = 0 if w > 0.7, 1 if w > 0.5, 2 if w > 0.3,
//!           3 if w > 0.15, 4 if w > 0.08, else 5   (strict >)
//! level   = clamp(anchor_level − dropped, 0, 5)
//! ```
//!
//! So an expansion to L3 decays *from L3* and never jumps back to L5 on its
//! own. Open-tail turns and pending blocks do not count toward the age: the
//! positions count ready blocks only.
//!
//! Pure functions: positions are parameters; the caller persists the anchor
//! (integers only — the weight is never stored).

/// Default decay rate per ready block (V2 `BLOCK_DECAY_LAMBDA`). Any finite
/// `λ ≥ 0` is allowed; values above 0.4 are not recommended.
pub const BLOCK_DECAY_LAMBDA: f64 = 0.30;

/// The highest level: the raw transcript.
pub const MAX_LEVEL: u8 = 5;

/// Levels dropped below the anchor for a block weight `w` (spec §6.1):
/// `w > 0.7 → 0`, `> 0.5 → 1`, `> 0.3 → 2`, `> 0.15 → 3`, `> 0.08 → 4`,
/// else `5`, with strict comparisons.
///
/// For a block anchored at L5 the level shown is `5 − level_from_weight(w)`;
/// in general it is `anchor − level_from_weight(w)`, clamped (see
/// [`decayed_level`]). A NaN weight drops all five levels.
pub fn level_from_weight(w: f64) -> u8 {
    if w > 0.7 {
        0
    } else if w > 0.5 {
        1
    } else if w > 0.3 {
        2
    } else if w > 0.15 {
        3
    } else if w > 0.08 {
        4
    } else {
        5
    }
}

/// The block weight `exp(−λ · max(0, latest − anchor))`.
///
/// Age 0 always weighs 1. A negative or NaN `λ` is treated as 0 (no decay);
/// `λ = +∞` gives weight 0 at any positive age.
pub fn block_weight(anchor_position: u32, latest_position: u32, lambda: f64) -> f64 {
    let age = latest_position.saturating_sub(anchor_position);
    if age == 0 {
        return 1.0;
    }
    // `!(λ > 0)` also catches NaN.
    let lambda = if lambda > 0.0 { lambda } else { 0.0 };
    (-lambda * f64::from(age)).exp()
}

/// The level of a block now: `clamp(anchor_level − dropped, 0, 5)` where
/// `dropped = level_from_weight(block_weight(anchor_position, latest_position, λ))`
/// (V2 `getDecayedBlockLevel`; the spec's `round` is a no-op on integers).
///
/// `latest_position` is the number of ready blocks in the thread; a latest
/// position before the anchor counts as age 0.
pub fn decayed_level(
    anchor_level: u8,
    anchor_position: u32,
    latest_position: u32,
    lambda: f64,
) -> u8 {
    let dropped = level_from_weight(block_weight(anchor_position, latest_position, lambda));
    anchor_level.min(MAX_LEVEL).saturating_sub(dropped)
}

/// The level an expansion asks for (spec §6.5 `normalizeBlockLevel`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum ExpandTarget {
    /// One level more detailed than the current level (capped at L5); the
    /// default when no target is given.
    #[default]
    Next,
    /// The raw transcript, L5.
    Raw,
    /// A specific level, 0..=5 (higher values are treated as 5).
    Level(u8),
}

/// Parses an expansion target, ASCII case-insensitively, after trimming:
/// `raw`, `L5`, `5` → [`ExpandTarget::Raw`]; `next`, `+1` →
/// [`ExpandTarget::Next`]; `L0`..`L4` or `0`..`4` → [`ExpandTarget::Level`].
///
/// Anything else (including the empty string, `L6`, `3.0`, `-1`) is `None`:
/// StrataGate silently treats unknown targets as "next", but we reject instead
/// of guessing, so the caller can report the bad input. A caller with no
/// target at all should use [`ExpandTarget::default`] (`Next`), as StrataGate
/// does for `undefined`. Trimming happens before parsing, so `" L3"` is L3
/// (spec §21 item 6 pitfall).
pub fn parse_expand_target(text: &str) -> Option<ExpandTarget> {
    let t = text.trim().to_ascii_lowercase();
    match t.as_str() {
        "raw" | "l5" | "5" => return Some(ExpandTarget::Raw),
        "next" | "+1" => return Some(ExpandTarget::Next),
        _ => {}
    }
    let digits = t.strip_prefix('l').unwrap_or(&t);
    match digits.as_bytes() {
        [d @ b'0'..=b'5'] => Some(ExpandTarget::Level(d - b'0')),
        _ => None,
    }
}

/// The level an expansion sets, given the block's `current` (decayed) level:
/// `Next → min(current + 1, 5)`, `Raw → 5`, `Level(n) → min(n, 5)`.
///
/// A level below `current` is allowed: the expansion then re-anchors lower.
/// The caller re-anchors the block at the returned level and the latest ready
/// position, so later decay starts from there.
pub fn expand_level(target: ExpandTarget, current: u8) -> u8 {
    match target {
        ExpandTarget::Next => current.saturating_add(1).min(MAX_LEVEL),
        ExpandTarget::Raw => MAX_LEVEL,
        ExpandTarget::Level(n) => n.min(MAX_LEVEL),
    }
}

/// The spec's label of a level (§6.1); levels above 5 are labelled as L5.
pub fn level_label(level: u8) -> &'static str {
    match level {
        0 => "L0 title and tags",
        1 => "L1 narrative summary",
        2 => "L2 key points",
        3 => "L3 rule-condensed transcript",
        4 => "L4 readable near-verbatim transcript",
        _ => "L5 raw transcript",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_from_weight_thresholds_are_strict() {
        let cases: &[(f64, u8)] = &[
            (1.0, 0),
            (0.7001, 0),
            (0.7, 1),
            (0.5001, 1),
            (0.5, 2),
            (0.3001, 2),
            (0.3, 3),
            (0.1501, 3),
            (0.15, 4),
            (0.0801, 4),
            (0.08, 5),
            (0.0, 5),
            (f64::NAN, 5),
        ];
        for &(w, dropped) in cases {
            assert_eq!(level_from_weight(w), dropped, "w={w}");
        }
    }

    #[test]
    fn spec_table_lambda_030_from_l5() {
        // §22 item 5: ages 0..9 → 5,5,4,3,3,2,2,1,1,0 (anchor at position 1).
        let expected = [5, 5, 4, 3, 3, 2, 2, 1, 1, 0];
        for (age, &level) in expected.iter().enumerate() {
            let latest = 1 + age as u32;
            assert_eq!(
                decayed_level(5, 1, latest, BLOCK_DECAY_LAMBDA),
                level,
                "age {age}"
            );
        }
        for age in 9..40 {
            assert_eq!(decayed_level(5, 1, 1 + age, BLOCK_DECAY_LAMBDA), 0);
        }
    }

    /// The first age at which each level L4..L0 is reached from L5.
    fn first_ages(lambda: f64) -> Vec<(u8, u32)> {
        let mut out = Vec::new();
        let mut last = 5;
        for age in 0..200 {
            let level = decayed_level(5, 10, 10 + age, lambda);
            assert!(level <= last, "levels never rise with age");
            if level < last {
                out.push((level, age));
                last = level;
            }
        }
        out
    }

    #[test]
    fn spec_tables_for_other_lambdas() {
        assert_eq!(first_ages(0.30), [(4, 2), (3, 3), (2, 5), (1, 7), (0, 9)]);
        assert_eq!(first_ages(0.2), [(4, 2), (3, 4), (2, 7), (1, 10), (0, 13)]);
        assert_eq!(first_ages(0.4), [(4, 1), (3, 2), (2, 4), (1, 5), (0, 7)]);
        assert_eq!(decayed_level(5, 3, 7, 0.1), 4, "λ=0.1 age 4 → L4");
    }

    #[test]
    fn v1_turn_table_lambda_005() {
        // V1 decays by turns with λ = 0.05: 0→5, 12→4, 24→3, 36→2, 48→1, 60→0.
        for (t, level) in [(0, 5), (7, 5), (12, 4), (24, 3), (36, 2), (48, 1), (60, 0)] {
            assert_eq!(decayed_level(5, 100, 100 + t, 0.05), level, "t={t}");
        }
        assert!((block_weight(0, 12, 0.05) - (-0.6_f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn expansion_decays_from_its_anchor() {
        // Anchor L3 at position 4.
        let cases = [
            (4, 3),
            (5, 3),
            (6, 2),
            (7, 1),
            (8, 1),
            (9, 0),
            (10, 0),
            (30, 0),
        ];
        for (latest, level) in cases {
            assert_eq!(
                decayed_level(3, 4, latest, BLOCK_DECAY_LAMBDA),
                level,
                "latest {latest}"
            );
        }
        // Never above the anchor level, at any age.
        for latest in 0..40 {
            assert!(decayed_level(3, 4, latest, BLOCK_DECAY_LAMBDA) <= 3);
        }
    }

    #[test]
    fn degenerate_inputs() {
        // Latest before the anchor counts as age 0.
        assert_eq!(decayed_level(4, 9, 2, BLOCK_DECAY_LAMBDA), 4);
        // Anchor levels above 5 are clamped.
        assert_eq!(decayed_level(9, 1, 1, BLOCK_DECAY_LAMBDA), 5);
        // λ = 0, negative or NaN: no decay.
        for lambda in [0.0, -1.0, f64::NAN] {
            assert_eq!(decayed_level(5, 1, 1_000, lambda), 5, "λ={lambda}");
        }
        // λ = ∞: age 0 keeps the anchor, any later age drops to L0.
        assert_eq!(decayed_level(5, 1, 1, f64::INFINITY), 5);
        assert_eq!(decayed_level(5, 1, 2, f64::INFINITY), 0);
    }

    #[test]
    fn parse_targets() {
        use ExpandTarget::{Level, Next, Raw};
        let cases: &[(&str, Option<ExpandTarget>)] = &[
            ("raw", Some(Raw)),
            ("RAW", Some(Raw)),
            ("L5", Some(Raw)),
            ("l5", Some(Raw)),
            ("5", Some(Raw)),
            ("next", Some(Next)),
            (" Next ", Some(Next)),
            ("+1", Some(Next)),
            ("L0", Some(Level(0))),
            ("l2", Some(Level(2))),
            ("3", Some(Level(3))),
            (" L3", Some(Level(3))),
            ("L4\n", Some(Level(4))),
            ("", None),
            ("   ", None),
            ("L6", None),
            ("6", None),
            ("-1", None),
            ("3.0", None),
            ("L", None),
            ("LL3", None),
            ("L 3", None),
            ("level3", None),
            ("prev", None),
            ("+2", None),
        ];
        for &(text, expected) in cases {
            assert_eq!(parse_expand_target(text), expected, "{text:?}");
        }
    }

    #[test]
    fn expand_levels() {
        use ExpandTarget::{Level, Next, Raw};
        let cases: &[(ExpandTarget, u8, u8)] = &[
            (Next, 0, 1),
            (Next, 2, 3),
            (Next, 4, 5),
            (Next, 5, 5),
            (Next, 9, 5),
            (Raw, 0, 5),
            (Raw, 5, 5),
            (Level(3), 1, 3),
            (Level(3), 5, 3),
            (Level(0), 4, 0),
            (Level(8), 2, 5),
        ];
        for &(target, current, level) in cases {
            assert_eq!(
                expand_level(target, current),
                level,
                "{target:?} from {current}"
            );
        }
        assert_eq!(ExpandTarget::default(), Next);
    }

    #[test]
    fn expand_to_l3_then_decay() {
        // §22 item 6: a block at L1 expanded to 'L3' returns 3, anchors at L3
        // at the latest position, and later decays from L3.
        let latest = 8;
        let current = decayed_level(5, 1, latest, BLOCK_DECAY_LAMBDA);
        assert_eq!(current, 1);
        let target = parse_expand_target("L3").unwrap();
        let level = expand_level(target, current);
        assert_eq!(level, 3);
        let (anchor_level, anchor_position) = (level, latest);
        assert_eq!(
            decayed_level(anchor_level, anchor_position, latest, BLOCK_DECAY_LAMBDA),
            3
        );
        assert_eq!(
            decayed_level(
                anchor_level,
                anchor_position,
                latest + 2,
                BLOCK_DECAY_LAMBDA
            ),
            2
        );
        // 'next' is current + 1, 'raw' is 5.
        assert_eq!(
            expand_level(parse_expand_target("next").unwrap(), current),
            2
        );
        assert_eq!(
            expand_level(parse_expand_target("raw").unwrap(), current),
            5
        );
    }

    #[test]
    fn labels() {
        let cases = [
            (0, "L0 title and tags"),
            (1, "L1 narrative summary"),
            (2, "L2 key points"),
            (3, "L3 rule-condensed transcript"),
            (4, "L4 readable near-verbatim transcript"),
            (5, "L5 raw transcript"),
            (6, "L5 raw transcript"),
        ];
        for (level, label) in cases {
            assert_eq!(level_label(level), label);
        }
    }
}
